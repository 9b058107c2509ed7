package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/writhq/writ/protocol"
)

// AdminEntries lists admin entries (writ.admin/v1) newest first: at most
// limit (0: the server's default), below the ledger index before (0: from
// the newest). It needs an admin or auditor token; an auditor of one tenant
// lists that tenant's entries. Each is proved by Receipt(entry.Index).
func (c *Client) AdminEntries(ctx context.Context, before uint64, limit int) ([]protocol.AdminEntry, error) {
	q := url.Values{}
	if before > 0 {
		q.Set("before", strconv.FormatUint(before, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/v1/ledger/admin"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out struct {
		Entries []protocol.AdminEntry `json:"entries"`
	}
	return out.Entries, c.do(ctx, http.MethodGet, path, nil, &out)
}
