// Package spec is the operation spec as plain data: for every operation of
// every primitive, the script it runs, its typed KEYS and ARGV, its typed
// reply, and the native server commands that can stand in for the script.
// Package gen renders the driver contract and the client adapters from it.
package spec

// Type is the Go type of a parameter or a reply field.
type Type int

const (
	// String is a Go string sent as is.
	String Type = iota
	// Int is an int64.
	Int
	// Bool is a reply integer, 1 for true and 0 for false.
	Bool
	// Millis is a time.Duration sent and received as whole milliseconds.
	Millis
	// Strings is a []string of keys, the last key parameter: it fills
	// KEYS from its place on, so one script serves any number of names.
	// The script header declares it as KEYS[i..]. As the last reply field,
	// it holds the rest of the reply.
	Strings
)

// Param is one KEYS[i] or ARGV[i] of a script, in order.
type Param struct {
	Name string // the Go parameter name; the script header uses the same name
	Type Type   // String, Int or Millis for arguments; String or Strings for keys
}

// Field is one element of a script's reply, in order. An operation with
// one field returns that value; with more, a struct named <Op>Reply. A
// reply with a String or Strings field is all strings, numbers in decimal.
type Field struct {
	Name string // the Go field name
	Type Type   // Int, Bool, Millis, String, or Strings (the last field)
	Doc  string
}

// Reply says how a native command's reply maps onto the operation's single
// integer result.
type Reply int

const (
	// IntReply is an integer reply passed through.
	IntReply Reply = iota
	// OKReply is a status reply: OK is 1 and a nil reply is 0.
	OKReply
)

// Native is a server command that does what the operation's script does.
// Support is probed once per node by running it against a key that does
// not exist: a server that lacks it answers with an error, one that has it
// answers without writing anything.
type Native struct {
	Name    string   // suffix of the Go method name: Release + Delex = ReleaseDelex
	Server  string   // the servers that have the command, for docs and logs
	Command []string // the command's words; "$name" stands for that parameter
	Reply   Reply
}

// Op is one operation of a primitive.
type Op struct {
	Name    string // the Go method name
	Script  string // the file under scripts/lua, without ".lua"
	Doc     string // the method's doc comment, after its name
	Keys    []Param
	Args    []Param
	Reply   []Field
	Natives []Native
}
