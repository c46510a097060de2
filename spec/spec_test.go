package spec_test

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/redlockgo/redlock/scripts/lua"
	"github.com/redlockgo/redlock/spec"
)

// pinnedSHA1 is the SHA1 of every script. A script edit changes the
// EVALSHA digest servers cache, so it must be a deliberate, reviewed
// change: update the value here AND rerun `go generate ./...`, which
// bakes the digests into driver/zz_generated.go.
var pinnedSHA1 = map[string]string{
	"extend":                "a50a84e650eff4a38701e8514404a056612b1be8",
	"extend_owned":          "95822b0ab03e6134c6a64175d417b34ea1f1c6dc",
	"fence_raise":           "180c6e0c53e09854a0bf69cc421e99eae2b41c77",
	"mutex_acquire":         "a9b107da9212a9295523c61bc61a9363fd536c78",
	"mutex_acquire_owned":   "bbe1da054a506f372a416241316ecc9830887f50",
	"multi_acquire":         "4f1327ee6b8d567ddefc64b91320065c8dbcc988",
	"multi_release":         "9eaa0ccce637ba87e07d515871eb0468c26f9f47",
	"fair_acquire":          "ee7f0cbe393181432f3c0a5afbf17033d2f3c567",
	"fair_release":          "99c6aaebd9910a9d308278599e730335041482a8",
	"rw_lock":               "b3659b2eeff428ed3f27cb996fc856bcff6980b4",
	"rw_release":            "2100350afddd3982b6b36d3e415fc3dc4bd0a3e2",
	"rw_rextend":            "8141912555b645ba8b5bf87dd00fe9dd459253c6",
	"rw_rlock":              "16ace7989783b45a5a709187fa65d7b20f5a152e",
	"release":               "99725df1739b85d0333665d9d3ae01ba5e5b7211",
	"release_wake":          "84bd7c6180b6cac6261aefc94053e9076a54ee3f",
	"mutex_leave":           "af66e1c3a2a26db3291639d239dc1e1c5788ab0f",
	"release_owned":         "9c740cfbd7e703e53fbb54a6d54554da136c94d0",
	"latch_count_down":      "fef91623f673272f6d6ca4f3651a7395b1a4f367",
	"latch_read":            "a723b7ef41d6695668d4e7ddd61bf2ae1a9c087b",
	"latch_try_set":         "6e409b14df5417178775bd09cbb834819136c4b1",
	"latch_unset":           "1e39dccc691e0128bb9ae3d097d4e1e471f4cb66",
	"semaphore_acquire":     "80a2be625432a93697ad0bc833b8e1e0ecc3f625",
	"semaphore_available":   "2179b1d7c386f6cbc8ff32833051e95a12f36793",
	"semaphore_extend":      "fb2cb8d46063a277741b68407b62b3ca06d1dfd0",
	"semaphore_fence_raise": "2844da328f5569b07d79757b18ae0669f26119e2",
	"semaphore_release":     "696bdd504c733dc93fb9c51c6dbddad35dfb4412",
	"semaphore_set_permits": "6c7774c04a9b223c1c5543545c33f594515dc833",
}

func TestScriptSHA1sArePinned(t *testing.T) {
	for _, file := range lua.Names() {
		name := strings.TrimSuffix(file, ".lua")
		sum := sha1.Sum([]byte(lua.Source(file)))
		if got := hex.EncodeToString(sum[:]); got != pinnedSHA1[name] {
			t.Errorf("%s: sha1 %s, pinned %q; if the edit is deliberate, update pinnedSHA1 and run go generate ./...", file, got, pinnedSHA1[name])
		}
	}
	if len(pinnedSHA1) != len(lua.Names()) {
		t.Errorf("pinnedSHA1 has %d entries for %d scripts", len(pinnedSHA1), len(lua.Names()))
	}
}

// The generator embeds scripts by name, so a script no op runs is dead
// weight and an op naming a missing script would panic at init.
func TestEveryScriptIsUsedByExactlyOneOp(t *testing.T) {
	users := map[string]int{}
	for _, op := range spec.Ops {
		users[op.Script+".lua"]++
	}
	files := lua.Names()
	for _, f := range files {
		if strings.HasSuffix(f, ".lua") && users[f] != 1 {
			t.Errorf("%s is the script of %d ops, want 1", f, users[f])
		}
	}
	for f := range users {
		if !slices.Contains(files, f) {
			t.Errorf("scripts/lua/%s is named by the spec but does not exist", f)
		}
	}
}

// Op and parameter names become Go identifiers in one scope.
func TestNamesAreUnique(t *testing.T) {
	ops := map[string]bool{}
	for _, op := range spec.Ops {
		if ops[op.Name] {
			t.Errorf("op %s declared twice", op.Name)
		}
		ops[op.Name] = true
		seen := map[string]bool{"ctx": true} // ctx is the first Go parameter
		for _, p := range params(op) {
			if seen[p.Name] {
				t.Errorf("%s: parameter %s declared twice (or named ctx)", op.Name, p.Name)
			}
			seen[p.Name] = true
		}
	}
}

// The generator only knows how to send and decode these combinations: a
// String reply field would not compile (the decoder passes int64 through)
// and a Bool argument has no wire form.
func TestTypes(t *testing.T) {
	for _, op := range spec.Ops {
		for i, k := range op.Keys {
			switch {
			case k.Type == spec.Strings && i != len(op.Keys)-1:
				t.Errorf("%s: key %s is Strings but not the last key", op.Name, k.Name)
			case k.Type == spec.Strings && len(op.Natives) > 0:
				t.Errorf("%s: key %s is Strings, which no native command takes", op.Name, k.Name)
			case k.Type != spec.String && k.Type != spec.Strings:
				t.Errorf("%s: key %s is neither String nor Strings", op.Name, k.Name)
			}
		}
		for _, a := range op.Args {
			if a.Type == spec.Bool || a.Type == spec.Strings {
				t.Errorf("%s: argument %s is a Bool or Strings", op.Name, a.Name)
			}
		}
		if len(op.Reply) == 0 {
			t.Errorf("%s: no reply field", op.Name)
		}
		for _, f := range op.Reply {
			if f.Type == spec.String || f.Type == spec.Strings {
				t.Errorf("%s: reply field %s is a String or Strings", op.Name, f.Name)
			}
		}
	}
}

var (
	headerParam = regexp.MustCompile(`^-- (KEYS|ARGV)\[(\d+)(\.\.)?\] (\w+):`)
	bodyRef     = regexp.MustCompile(`\b(KEYS|ARGV)\[(\d+)\]`)
)

// The script header is the script's documentation and the spec is what the
// Go code sends: they must agree on every KEYS[i] and ARGV[i], and the body
// must use exactly the declared ones, or a script reads a slot no caller fills.
// A Strings key is declared KEYS[i..] and read at computed indexes.
func TestScriptHeadersMatchSpec(t *testing.T) {
	for _, op := range spec.Ops {
		src := lua.Source(op.Script + ".lua")
		var header, body []string
		for _, line := range strings.Split(src, "\n") {
			if len(body) == 0 && strings.HasPrefix(line, "--") {
				header = append(header, line)
			} else {
				body = append(body, line)
			}
		}
		declared := map[string][]string{}
		hasReturns := false
		for _, line := range header {
			if m := headerParam.FindStringSubmatch(line); m != nil {
				if want := fmt.Sprint(len(declared[m[1]]) + 1); m[2] != want {
					t.Errorf("%s.lua: %s[%s] declared where %s[%s] was expected", op.Script, m[1], m[2], m[1], want)
				}
				declared[m[1]] = append(declared[m[1]], m[4]+m[3])
			}
			hasReturns = hasReturns || strings.HasPrefix(line, "-- Returns:")
		}
		if !hasReturns {
			t.Errorf("%s.lua: header has no -- Returns: line", op.Script)
		}
		checkNames(t, op.Script+".lua KEYS", declared["KEYS"], op.Keys)
		checkNames(t, op.Script+".lua ARGV", declared["ARGV"], op.Args)

		used := map[string]bool{}
		for _, line := range body {
			if strings.HasPrefix(strings.TrimSpace(line), "--") {
				continue // a comment in the body is not a use
			}
			for _, m := range bodyRef.FindAllStringSubmatch(line, -1) {
				used[m[1]+"["+m[2]+"]"] = true
			}
		}
		want := map[string]bool{}
		for i, k := range op.Keys {
			if k.Type != spec.Strings {
				want[fmt.Sprintf("KEYS[%d]", i+1)] = true
			}
		}
		for i := range op.Args {
			want[fmt.Sprintf("ARGV[%d]", i+1)] = true
		}
		for ref := range used {
			if !want[ref] {
				t.Errorf("%s.lua uses %s, which the spec does not declare", op.Script, ref)
			}
		}
		for ref := range want {
			if !used[ref] {
				t.Errorf("%s.lua never uses its declared %s", op.Script, ref)
			}
		}
	}
}

func checkNames(t *testing.T, where string, header []string, ps []spec.Param) {
	t.Helper()
	var names []string
	for _, p := range ps {
		if p.Type == spec.Strings {
			names = append(names, p.Name+"..") // declared as KEYS[i..]
		} else {
			names = append(names, p.Name)
		}
	}
	if !slices.Equal(header, names) {
		t.Errorf("%s: header declares %q, spec has %q", where, header, names)
	}
}

var upperWord = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// A native stands in for the script and is rendered from the command words.
// The rueidis adapter builds Arbitrary(cmd).Keys(keys...).Args(rest...), and
// the other adapters send keys before arguments too, so the key words must
// come right after the command name or the command would be reordered.
func TestNatives(t *testing.T) {
	for _, op := range spec.Ops {
		if len(op.Natives) > 0 && len(op.Reply) != 1 {
			t.Errorf("%s: has natives but %d reply fields; a native returns one integer", op.Name, len(op.Reply))
		}
		isParam := map[string]bool{}
		for _, p := range params(op) {
			isParam[p.Name] = true
		}
		for _, n := range op.Natives {
			where := op.Name + n.Name
			if len(n.Command) == 0 || !upperWord.MatchString(n.Command[0]) {
				t.Errorf("%s: command %q does not start with an upper-case command name", where, n.Command)
				continue
			}
			for _, w := range n.Command[1:] {
				if name, ok := strings.CutPrefix(w, "$"); ok && !isParam[name] {
					t.Errorf("%s: %s names no parameter of %s", where, w, op.Name)
				}
			}
			for i, k := range op.Keys {
				if i+1 >= len(n.Command) || n.Command[i+1] != "$"+k.Name {
					t.Errorf("%s: command %q must have $%s at word %d: keys come right after the command name", where, n.Command, k.Name, i+1)
				}
				if slices.Contains(n.Command[min(len(op.Keys)+1, len(n.Command)):], "$"+k.Name) {
					t.Errorf("%s: key $%s repeated among the arguments", where, k.Name)
				}
			}
		}
	}
}

func params(op spec.Op) []spec.Param {
	return append(slices.Clone(op.Keys), op.Args...)
}
