// Command benchceiling is the reference of the HTTP benchmarks
// (scripts/serve-bench.sh): the cheapest net/http server that answers every
// request with a fixed 200-byte JSON body. Whatever xfsq serve does per
// request is measured as a ratio to this, in the same run on the same
// machine, so that the goals do not depend on how fast the machine is.
package main

import (
	"flag"
	"log"
	"net/http"
	"strings"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9743", "address to listen on")
	flag.Parse()
	const prefix, suffix = `{"project":"p0001","decision":"ok","message":"`, "\"}\n"
	body := []byte(prefix + strings.Repeat("x", 200-len(prefix)-len(suffix)) + suffix)
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
