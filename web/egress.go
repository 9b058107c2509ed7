package web

// EgressInfo is a result's egress audit: its listed attempts and counts.
type EgressInfo struct {
	Entries                              []EgressRow
	Allowed, Refused, BytesUp, BytesDown int64
}

// EgressRow is one connection attempt of a tool.
type EgressRow struct {
	Host, Via, Reason  string
	Port               int
	Allowed            bool
	BytesUp, BytesDown int64
}
