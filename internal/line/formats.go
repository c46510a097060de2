package line

// The formats of ticket keys and channels, which the scripts share: each
// is declared once here and once in scripts/lua/lib/formats.lua;
// spec/formats.go documents them, and core's formats test checks both
// sides against it.
const (
	TicketInfix     = ":t:"     // <key>:t:<client id>:<random>: the scripts find the Client's channel there
	ClientInfix     = "client:" // <key prefix>client:<client id>: where the scripts tell its waiters
	ShardInfix      = ":c:"     // <ticket key before TicketInfix>:c:<client id>: the sharded channel on a Cluster
	OneServerSecret = "solo"    // starts the secrets stored on a node that is one server: the scripts tell there on ClientInfix alone
)
