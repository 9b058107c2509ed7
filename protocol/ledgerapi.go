package protocol

// PublicReceipt is what GET /v1/receipts/{index} answers without credentials:
// the hash of the leaf, its inclusion proof and the checkpoint it is proved
// against, which is what a witness or a monitor checks, and nothing of the
// receipt's content.
type PublicReceipt struct {
	Index      int64    `json:"index"`
	LeafHash   string   `json:"leaf_hash"`
	Proof      []string `json:"proof"`
	Checkpoint string   `json:"checkpoint"`
}
