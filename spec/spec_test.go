package spec_test

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strconv"
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
	"fair_force":            "076595b16d9e75484d57c469fb551f5ba5702256",
	"mutex_force":           "5c381911e8d717f5db4e0207346a65d5a16c29f3",
	"rw_force":              "0b79ea4a64ae742dd7f2417290df983fc8bb27d2",
	"extend":                "f2a1e970027219e25866dfb0b2c27941288da868",
	"extend_owned":          "1e7a34a761834a2f484690eaa9969e096468e547",
	"lock_ttl":              "d8b2eea0899161b1e97af4409e706f1c9b791b5f",
	"owned_ttl":             "50c73fbc913d1bb7f1ee77c7eb2b9a854632fc51",
	"rw_read_ttl":           "2e0a68faadad1ddb7ad98470c86e5b1cbdfd3e0e",
	"semaphore_ttl":         "a2ee345c6b9361e154d10057d42ea579e3bb1b37",
	"fence_raise":           "97194305bbc9cd4feff302140f359e2c486542fc",
	"mutex_force_lock":      "1a5053ccdf1ed8aa3a31962aace5dbbf5e462b79",
	"was_forced":            "580f3f63079b87f39e0703559c4bf417355b7e2d",
	"mutex_acquire":         "e3f6065600f5e8ccf7cee9da7e44a92f9b1ce966",
	"mutex_acquire_owned":   "754375cafb0980053d751c4d903bf08196c65e4f",
	"multi_acquire":         "c269dd6b056834b6c493af873caa521c8894916e",
	"multi_release":         "2e615ad88acb740cc2d59fabe113c839d1934534",
	"fair_acquire":          "76537484c4113544c5aa95da743bb3fa04443a44",
	"fair_release":          "42e3099d3cecc1e7c6f19d9abed4ee1ffb303537",
	"fair_state":            "b7e47ec633be08a356a4f1595cd27235f8ee135a",
	"rw_lock":               "0ecb1cf1090a08f882ccbe2397904418288a6647",
	"rw_release":            "77c318f53d13350209c03d8e1f54646bef3aa596",
	"extend_lock":           "8564acc297b4e5eea0b33c2c81a19981dbc05d16",
	"keep_mark":             "86b022de2099946090da7ca1d68b2c05c92df44a",
	"rw_rextend":            "f9d164cba064816b8127e5e8bddea58c3b1a994a",
	"rw_rlock":              "3043f9044640c1ecdc20a86effaf6d15f998ff0b",
	"rw_downgrade":          "44bb2a4358477f29e46de2f475d135bf217ba303",
	"rw_state":              "9f4e95a998200402717ad2fc51f826b74132f6f6",
	"release":               "d36620724c79f5456e3040d735002186abdb83bf",
	"release_wake":          "d60e970fff1044300282537ef3bb3ef3152c0a3f",
	"release_or_mark":       "34ce9696ae4e3af9f1bfb1ae0f4ae8cfe4f84b2d",
	"mutex_leave":           "df3674eaabc2442b41bc50b2fb82878d54cbd98e",
	"mutex_state":           "a0e88683721471db92a914e0771656bfa3a90b6c",
	"release_owned":         "a09b24be41bf05b7aefc87302cf647b4f0b25718",
	"latch_count_down":      "3b3944d77b89f32ffd1dd810fe7865ba181b0313",
	"latch_delete":          "4781d8788375970f112ed4d12424c6f614acba80",
	"latch_read":            "a723b7ef41d6695668d4e7ddd61bf2ae1a9c087b",
	"latch_try_set":         "945115f22655f8593e6502bc29acc8ac999583f1",
	"latch_unset":           "516a0801a0f987148609d9462a79e0f01eca9578",
	"semaphore_acquire":     "45098c2a4f22beb9a70ff119c98c896168f3dec5",
	"semaphore_available":   "2dffdf5bb549dd68a15c8efca7840456c9d8b2d7",
	"semaphore_extend":      "6fe26f71cd44bf1a689a23ab5048d345250aca05",
	"semaphore_fence_raise": "9f3b789ea46fde9266e65f4418d4e33a2f3ce0f5",
	"semaphore_release":     "62109ae47127174d7cb6d694b83cac410180e0f9",
	"semaphore_release_all": "cc198d3ca9b230870cb0646b5f533f41ff2834cb",
	"semaphore_set_permits": "c02dcaea1e14deaf44d23cb943a919718bdd9e48",
	"semaphore_state":       "4a7ee07f5b988b7e42f905a2bde84a84152716c6",

	"semaphore_add_permits":     "1cc09d6fb48e92d81968e42eba858c6201a936db",
	"semaphore_try_set_permits": "57fd015cdfd57117ffb703c937f1de0563231dfa",
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
// String reply field needs a reply of several fields (decoded from
// strings), a Strings field (the rest of the reply) comes last, no native
// command replies so, and a Bool argument has no wire form.
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
		for i, f := range op.Reply {
			switch {
			case f.Type == spec.Strings && (i != len(op.Reply)-1 || i == 0 || len(op.Natives) > 0):
				t.Errorf("%s: reply field %s is Strings but not the last of several fields of a script's reply", op.Name, f.Name)
			case f.Type == spec.String && (len(op.Reply) < 2 || len(op.Natives) > 0):
				t.Errorf("%s: reply field %s is a String, which only a script's reply of several fields can hold", op.Name, f.Name)
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

// TestFormatsMatchTheScripts checks the scripts' side of the formats they
// share with core (core's test checks the other): lib/formats.lua declares
// each as spec/formats.go says, and no script spells one out elsewhere.
func TestFormatsMatchTheScripts(t *testing.T) {
	const file = "lib/formats.lua"
	decl := regexp.MustCompile(`^local (\w+) = (.+)$`)
	declared := map[string]string{}
	for line := range strings.Lines(lua.Source(file)) {
		if m := decl.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			declared[m[1]] = m[2]
		}
	}
	var literals []string
	for _, f := range spec.Formats {
		want := "'" + f.Value + "'"
		if _, err := strconv.Atoi(f.Value); err == nil {
			want = f.Value
		} else {
			literals = append(literals, f.Value)
		}
		if got, ok := declared[f.Name]; !ok || got != want {
			t.Errorf("%s: local %s = %s, spec/formats.go says %s", file, f.Name, got, want)
		}
		delete(declared, f.Name)
	}
	for name := range declared {
		t.Errorf("%s declares %s, which spec/formats.go lacks", file, name)
	}
	formats := lua.Source(file)
	for _, name := range lua.Names() {
		src := strings.Replace(lua.Source(name), formats, "", 1)
		for line := range strings.Lines(src) {
			code, _, _ := strings.Cut(line, "--")
			for _, lit := range literals {
				if strings.Contains(code, lit) {
					t.Errorf("%s spells out %q: use the local of %s", name, lit, file)
				}
			}
		}
	}
}
