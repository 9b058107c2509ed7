package protocol

// ManifestHash returns the identity of a tool's manifest, the
// tool_manifest_hash a dispatch names: HashBytes of the RFC 8785 canonical
// form of the manifest text exactly as registered. Whitespace and member
// order do not change it; defaults are not filled in, so a manifest that
// spells out a default and one that leaves it out are different tools. The
// control plane computes it when a tool is registered and the agent when it
// reads its allowlist, with this one function. Text that Canonicalize
// refuses is an error (a *Error with CodeMalformed).
func ManifestHash(raw []byte) (string, error) {
	canon, err := Canonicalize(raw)
	if err != nil {
		return "", err
	}
	return HashBytes(canon), nil
}
