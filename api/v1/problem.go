package apiv1

import "fmt"

// ProblemType is the media type of every error body.
const ProblemType = "application/problem+json"

// Problem is an RFC 9457 problem detail, plus the operator's hint: every
// error answer of the API. As an error it reads "STATUS DETAIL: FIX".
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	// Fix is what to do about it, when the server knows.
	Fix string `json:"fix,omitempty"`
}

func (p *Problem) Error() string {
	msg := fmt.Sprintf("%d %s", p.Status, p.Detail)
	if p.Fix != "" {
		msg += ": " + p.Fix
	}
	return msg
}
