package core

import (
	"crypto/rand"
	"errors"
	"strings"
	"testing"
)

func TestMetadataInTokens(t *testing.T) {
	for _, m := range []string{"host-7 pid 42", "ü:{}-z m", strings.Repeat("x", MaxMetadata)} {
		o := options{metadata: m}
		if err := checkMetadata(m); err != nil {
			t.Errorf("checkMetadata(%q): %v", m, err)
		}
		tok := rand.Text() + o.metaTag()
		for _, id := range []string{tok, tok + "17", "3-" + tok + "-123-10000", rand.Text() + ":" + tok} {
			if got := MetadataOf(id); got != m {
				t.Errorf("MetadataOf(%q) = %q, want %q", id, got, m)
			}
		}
		if !isLeaseID(tok) || !isLeaseID(tok+"3") || !isHolderToken(tok) || isHolderToken(tok+"3") {
			t.Errorf("%q: a lease ID and a holder token, with a number a lease ID only", tok)
		}
	}
	for _, id := range []string{"", rand.Text(), "worker-7", "reserved:redlock:{x}:t:m61z", rand.Text() + "m6z", rand.Text() + "mz", rand.Text() + "m61"} {
		if got := MetadataOf(id); got != "" {
			t.Errorf("MetadataOf(%q) = %q, want none", id, got)
		}
	}
	for _, id := range []string{rand.Text() + "m6z", rand.Text() + "m61", rand.Text() + "mzz", rand.Text() + "m61zx"} {
		if isLeaseID(id) {
			t.Errorf("isLeaseID(%q), want not", id)
		}
	}
	for _, m := range []string{strings.Repeat("x", MaxMetadata+1), "a\nb", "tab\there", "\xff"} {
		if err := checkMetadata(m); !errors.Is(err, ErrInvalid) {
			t.Errorf("checkMetadata(%q) = %v, want ErrInvalid", m, err)
		}
	}
}
