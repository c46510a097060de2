package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dave/jennifer/jen"
	"github.com/redlockgo/redlock/spec"
)

// take is a synthetic op covering every parameter type and every reply
// field type, so each emitter's conversions show up in its output.
var take = spec.Op{
	Name:   "Take",
	Script: "take",
	Keys:   []spec.Param{{Name: "lock", Type: spec.String}},
	Args:   []spec.Param{{Name: "token", Type: spec.String}, {Name: "ttl", Type: spec.Millis}, {Name: "n", Type: spec.Int}},
	Reply: []spec.Field{
		{Name: "Taken", Type: spec.Bool},
		{Name: "Count", Type: spec.Int},
		{Name: "Left", Type: spec.Millis},
	},
}

// oneField is take with a single reply field of type t.
func oneField(t spec.Type) spec.Op {
	op := take
	op.Reply = []spec.Field{{Name: "Only", Type: t}}
	return op
}

// code renders one emitted declaration (gofmt-ed, qualified names shown
// with their package name) and trims the final newline.
func code(c jen.Code) string { return strings.TrimSpace(fmt.Sprintf("%#v", c)) }

func expect(t *testing.T, what string, c jen.Code, want string) {
	t.Helper()
	if got := code(c); got != strings.TrimSpace(want) {
		t.Errorf("%s:\n got:\n%s\nwant:\n%s", what, got, want)
	}
}

// A one-field op returns the converted integer itself, passing the error
// through: Bool is "== 1", Millis scales to a Duration, Int is unchanged.
func TestDecoderOneField(t *testing.T) {
	for _, c := range []struct {
		typ  spec.Type
		want string
	}{
		{spec.Bool, "func DecodeTake(v int64, err error) (bool, error) {\n\treturn v == 1, err\n}"},
		{spec.Int, "func DecodeTake(v int64, err error) (int64, error) {\n\treturn v, err\n}"},
		{spec.Millis, "func DecodeTake(v int64, err error) (time.Duration, error) {\n\treturn time.Duration(v) * time.Millisecond, err\n}"},
	} {
		got := code(decoder(oneField(c.typ)))
		if !strings.HasSuffix(got, c.want) {
			t.Errorf("type %d:\n got:\n%s\nwant suffix:\n%s", c.typ, got, c.want)
		}
	}
}

// A reply with a String field is all strings: the decoder checks the
// length (at least the fixed fields when a Strings field takes the rest),
// parses the numbers, passes the strings through, and gives the Strings
// field the rest of the reply.
func TestDecoderText(t *testing.T) {
	op := spec.Op{Name: "Peek", Script: "peek", Reply: []spec.Field{
		{Name: "Holder", Type: spec.String},
		{Name: "Left", Type: spec.Millis},
		{Name: "Rest", Type: spec.Strings},
	}}
	expect(t, "decoder", decoder(op), `
// DecodePeek turns the reply of peek.lua, or the error that came instead, into its Go form.
func DecodePeek(v []string, err error) (driver.PeekReply, error) {
	if err != nil {
		return driver.PeekReply{}, err
	}
	if len(v) < 2 {
		return driver.PeekReply{}, replyLengthError(PeekScript, 2, len(v))
	}
	n, err := parseNumbers(PeekScript, v, 1)
	if err != nil {
		return driver.PeekReply{}, err
	}
	return driver.PeekReply{
		Holder: v[0],
		Left:   time.Duration(n[1]) * time.Millisecond,
		Rest:   v[2:],
	}, nil
}`)
}

// A multi-field op checks the error first and the reply length second (a
// short reply must not panic on v[i]), then converts field i from v[i].
func TestDecoderThreeFields(t *testing.T) {
	expect(t, "decoder", decoder(take), `
// DecodeTake turns the reply of take.lua, or the error that came instead, into its Go form.
func DecodeTake(v []int64, err error) (driver.TakeReply, error) {
	if err != nil {
		return driver.TakeReply{}, err
	}
	if len(v) != 3 {
		return driver.TakeReply{}, replyLengthError(TakeScript, 3, len(v))
	}
	return driver.TakeReply{
		Count: v[1],
		Left:  time.Duration(v[2]) * time.Millisecond,
		Taken: v[0] == 1,
	}, nil
}`)
}

// An OKReply native goes through doOK; keys go in the []string and every
// other word, literal or parameter, follows in command order. rueidis takes
// string arguments only, so Int and Millis go through strconv.FormatInt.
func TestNativeMethodOKReply(t *testing.T) {
	op := oneField(spec.Int)
	n := spec.Native{Name: "Set", Server: "Redis 9", Command: []string{"SET", "$lock", "$token", "PX", "$ttl", "N", "$n"}, Reply: spec.OKReply}
	expect(t, "rueidis", nativeMethod(rueidis, op, n), `
// TakeSet runs SET $lock $token PX $ttl N $n (Redis 9).
func (d *Driver) TakeSet(ctx context.Context, lock string, token string, ttl time.Duration, n int64) (int64, error) {
	return adapter.DecodeTake(d.doOK(ctx, "SET", []string{lock}, token, "PX", strconv.FormatInt(ttl.Milliseconds(), 10), "N", strconv.FormatInt(n, 10)))
}`)
	expect(t, "goredis", nativeMethod(goredis, op, n), `
// TakeSet runs SET $lock $token PX $ttl N $n (Redis 9).
func (d *Driver) TakeSet(ctx context.Context, lock string, token string, ttl time.Duration, n int64) (int64, error) {
	return adapter.DecodeTake(d.doOK(ctx, "SET", []string{lock}, token, "PX", ttl.Milliseconds(), "N", n))
}`)
}

// An IntReply native goes through doInt instead.
func TestNativeMethodIntReply(t *testing.T) {
	n := spec.Native{Name: "Del", Command: []string{"DELIFEQ", "$lock", "$token"}, Reply: spec.IntReply}
	if got := code(nativeMethod(redigo, oneField(spec.Int), n)); !strings.Contains(got, `d.doInt(ctx, "DELIFEQ", []string{lock}, token)`) {
		t.Errorf("got:\n%s", got)
	}
}

// A script method picks evalInts for a multi-field reply and evalInt for
// one field; the script is referenced by its generated variable.
func TestScriptMethod(t *testing.T) {
	expect(t, "three fields", scriptMethod(redigo, take), `
// Take runs scripts/lua/take.lua.
func (d *Driver) Take(ctx context.Context, lock string, token string, ttl time.Duration, n int64) (driver.TakeReply, error) {
	return adapter.DecodeTake(d.evalInts(ctx, adapter.TakeScript, []string{lock}, token, ttl.Milliseconds(), n))
}`)
	if got := code(scriptMethod(rueidis, oneField(spec.Bool))); !strings.Contains(got, `d.evalInt(ctx, adapter.TakeScript, []string{lock}, token, strconv.FormatInt(ttl.Milliseconds(), 10), strconv.FormatInt(n, 10))`) {
		t.Errorf("one field, rueidis:\n%s", got)
	}
}

// Probe values must type-check against the parameter and hit the probe key:
// every key is the probe key, so the conditional native writes nothing.
func TestProbeValue(t *testing.T) {
	for _, c := range []struct {
		p     spec.Param
		isKey bool
		want  string
	}{
		{spec.Param{Name: "lock", Type: spec.String}, true, "key"},
		{spec.Param{Name: "token", Type: spec.String}, false, `"redlock-probe"`},
		{spec.Param{Name: "ttl", Type: spec.Millis}, false, "time.Second"},
		{spec.Param{Name: "n", Type: spec.Int}, false, "0"},
	} {
		if got := code(probeValue(c.p, c.isKey)); got != c.want {
			t.Errorf("probeValue(%s, key=%v) = %s, want %s", c.p.Name, c.isKey, got, c.want)
		}
	}
}

// A Strings key is passed as the KEYS it holds, after any String keys.
func TestScriptMethodStringsKeys(t *testing.T) {
	op := oneField(spec.Int)
	op.Keys = []spec.Param{{Name: "names", Type: spec.Strings}}
	if got := code(scriptMethod(goredis, op)); !strings.Contains(got, "Take(ctx context.Context, names []string,") || !strings.Contains(got, "adapter.TakeScript, names, token") {
		t.Errorf("only a Strings key:\n%s", got)
	}
	op.Keys = []spec.Param{{Name: "lock", Type: spec.String}, {Name: "names", Type: spec.Strings}}
	if got := code(scriptMethod(goredis, op)); !strings.Contains(got, "adapter.TakeScript, append([]string{lock}, names...), token") {
		t.Errorf("a String key, then a Strings key:\n%s", got)
	}
}

// An op with requestMin parameters or more takes them in <Op>Request, whose
// fields the method reads in the script's order; TTL keeps its initialism.
func TestRequestStruct(t *testing.T) {
	op := take
	op.Keys = []spec.Param{{Name: "lock", Type: spec.String}, {Name: "names", Type: spec.Strings}}
	op.Args = append(op.Args, spec.Param{Name: "a", Type: spec.Int}, spec.Param{Name: "b", Type: spec.String})
	expect(t, "request", requestStruct(op), `
// TakeRequest holds the keys and arguments of Take, in the order of scripts/lua/take.lua.
type TakeRequest struct {
	Lock  string        // KEYS[1]
	Names []string      // KEYS[2]
	Token string        // ARGV[1]
	TTL   time.Duration // ARGV[2]
	N     int64         // ARGV[3]
	A     int64         // ARGV[4]
	B     string        // ARGV[5]
}`)
	expect(t, "method", scriptMethod(redigo, op), `
// Take runs scripts/lua/take.lua.
func (d *Driver) Take(ctx context.Context, r driver.TakeRequest) (driver.TakeReply, error) {
	return adapter.DecodeTake(d.evalInts(ctx, adapter.TakeScript, append([]string{r.Lock}, r.Names...), r.Token, r.TTL.Milliseconds(), r.N, r.A, r.B))
}`)
}
