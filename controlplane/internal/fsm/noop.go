package fsm

// MsgNoop is an entry that changes nothing but the applied index: the raw
// Raft baseline of `writ bench admit` (entries of an admission's size through
// the same log and FSM, without verification, policy or state).
const MsgNoop MsgType = 56
