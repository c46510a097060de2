package line

import "testing"

func TestMergeFlags(t *testing.T) {
	for _, c := range []struct {
		current, want string
		changed       bool
	}{
		{"", "Kgx", true},
		{"Ex", "ExKg", true},
		{"xgK", "xgK", false},
		{"KEA", "KEA", false}, // A implies g and x
		{"AE", "AEK", true},
		{"Kx", "Kxg", true},
		{"Em", "EmKgx", true}, // m (key miss) is not implied by anything
	} {
		got, changed := mergeFlags(c.current, notifyFlags)
		if got != c.want || changed != c.changed {
			t.Errorf("mergeFlags(%q) = %q, %v; want %q, %v", c.current, got, changed, c.want, c.changed)
		}
	}
}
