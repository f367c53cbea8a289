package server

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/settings"
)

// wirePairs are the library's results the server encodes as they are,
// each beside the wire type a client decodes it into. A result that is
// the wire's type by alias (sandbox.TreeDiff = apiv1.TreeDiff, …) is not
// listed: it is declared once, and there is nothing to compare.
var wirePairs = []struct{ library, wire any }{
	{sandbox.ProjectRecord{}, apiv1.ProjectRecord{}},
	{sandbox.Project{}, apiv1.Project{}},
	{sandbox.EventPage{}, apiv1.EventPage{}},
	{sandbox.Overview{}, apiv1.Overview{}},
	{sandbox.ProjectStorage{}, apiv1.ProjectStorage{}},
	{files.RemoveResult{}, apiv1.FileRemoveResult{}},
	{files.Entry{}, apiv1.Entry{}},
	{settings.Value{}, apiv1.Setting{}},
	{sandbox.DoctorResult{}, apiv1.Doctor{}},
}

// TestLibraryResultsHaveTheWireShape holds every result the server answers
// with field for field equal, as JSON, to its wire type: a member added,
// renamed, retyped or made optional on one side and not the other fails
// here, not in a client that decodes it.
func TestLibraryResultsHaveTheWireShape(t *testing.T) {
	for _, p := range wirePairs {
		if reflect.TypeOf(p.library) == reflect.TypeOf(p.wire) {
			t.Errorf("%T is the wire's type by alias: there is nothing to compare, drop the pair", p.library)
			continue
		}
		lib, wire := jsonShape(reflect.TypeOf(p.library)), jsonShape(reflect.TypeOf(p.wire))
		if !slices.Equal(lib, wire) {
			t.Errorf("%T and %T differ as JSON:\nonly the library's: %s\nonly the wire's: %s", p.library, p.wire,
				strings.Join(missingFrom(lib, wire), ", "), strings.Join(missingFrom(wire, lib), ", "))
		}
	}
}

func missingFrom(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// jsonShape lists t's JSON members as "path: kind" lines, sorted, the way
// encoding/json writes them: embedded structs flattened, "-" and
// unexported fields left out, pointers nullable, omitempty marked.
func jsonShape(t reflect.Type) []string {
	var out []string
	shapeOf(t, "", map[reflect.Type]bool{}, &out)
	slices.Sort(out)
	return out
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

func shapeOf(t reflect.Type, path string, seen map[reflect.Type]bool, out *[]string) {
	nullable := ""
	for t.Kind() == reflect.Pointer {
		t, nullable = t.Elem(), "null|"
	}
	switch {
	case t == timeType:
		*out = append(*out, path+": "+nullable+"time")
	case t == rawType:
		*out = append(*out, path+": "+nullable+"any")
	case t.Kind() == reflect.Struct:
		*out = append(*out, path+": "+nullable+"object")
		if seen[t] { // a recursive type (a tree's children): once is its shape
			return
		}
		seen[t] = true
		defer delete(seen, t)
		fieldsOf(t, path, seen, out)
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		*out = append(*out, path+": "+nullable+"array")
		shapeOf(t.Elem(), path+"[]", seen, out)
	case t.Kind() == reflect.Map:
		*out = append(*out, path+": "+nullable+"map")
		shapeOf(t.Elem(), path+"{}", seen, out)
	case t.Kind() == reflect.String:
		*out = append(*out, path+": "+nullable+"string")
	case t.Kind() == reflect.Bool:
		*out = append(*out, path+": "+nullable+"boolean")
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Float64:
		*out = append(*out, path+": "+nullable+"number")
	default:
		*out = append(*out, path+": "+nullable+t.Kind().String())
	}
}

func fieldsOf(t reflect.Type, path string, seen map[reflect.Type]bool, out *[]string) {
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				fieldsOf(ft, path, seen, out)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		member := path + "." + name
		if strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero") {
			member += "?"
		}
		shapeOf(f.Type, member, seen, out)
	}
}
