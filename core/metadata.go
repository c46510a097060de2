package core

import (
	"encoding/hex"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxMetadata is the most bytes of metadata WithMetadata takes.
const MaxMetadata = 1024

// WithMetadata attaches metadata, a short text such as "host-7 pid 42", to
// every lease the primitive takes: Lease.Metadata returns it, and State
// shows it for the holder (MutexState.Metadata, Reader.Metadata,
// PermitLease.Metadata), so that an operator sees who holds a name. It
// costs no command and no key: the lease's token on the servers carries
// it, hex-encoded, so a lease with metadata is known by an ID that holds
// it (a Mutex lease resumed by that ID has it too). It applies to Mutex,
// FairMutex, RWMutex and Semaphore; at most MaxMetadata bytes of UTF-8
// without control characters, else the primitive's methods return
// ErrInvalid, writing nothing. WithMetadata("") attaches none.
func WithMetadata(metadata string) Option {
	return set(optMetadata, func(o *options) { o.metadata = metadata })
}

// Metadata returns the metadata the lease was taken with (WithMetadata),
// "" for none.
func (l *Lease) Metadata() string {
	if l == nil {
		return ""
	}
	return MetadataOf(l.ID())
}

// MetadataOf returns the metadata (WithMetadata) that a lease's ID
// carries, or a holder's that State lists (MutexState.Holder, Reader.ID,
// PermitLease.Holder); "" for none, and for an ID or holder that is none
// of these, such as a reentrant lock's owner.
func MetadataOf(id string) string {
	// A token is base32 ('A'–'Z', '2'–'7'), digits, ':' and '-', but for
	// its tag: metaOpen, the metadata in lowercase hex, metaClose.
	i := strings.IndexByte(id, metaOpen)
	if i < 0 {
		return ""
	}
	j := strings.IndexByte(id[i:], metaClose)
	if j < 0 || strings.Trim(id[:i]+id[i+j+1:], "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:-") != "" {
		return ""
	}
	b, err := hex.DecodeString(id[i+1 : i+j])
	if err != nil || len(b) == 0 {
		return ""
	}
	return string(b)
}

// The bounds of a token's metadata tag: lowercase letters, which no
// base32 token, Client id or number holds, and which are not hex digits.
// A tag keeps the token alphanumeric, as the scripts read grants' tokens
// (see lib/hand_on.lua), and a waiter's token numbers follow it (see
// line.Ticket.Rotate).
const (
	metaOpen  = 'm'
	metaClose = 'z'
)

// metaTag is the tag that o's tokens end with: "" without metadata.
func (o *options) metaTag() string {
	if o.metadata == "" {
		return ""
	}
	return string(metaOpen) + hex.EncodeToString([]byte(o.metadata)) + string(metaClose)
}

// checkMetadata reports metadata WithMetadata does not take.
func checkMetadata(m string) error {
	if len(m) > MaxMetadata {
		return invalid("metadata of %d bytes is over %d; keep it short, such as a host name and a process id", len(m), MaxMetadata)
	}
	if !utf8.ValidString(m) {
		return invalid("metadata %q is not valid UTF-8; pass text", m)
	}
	if i := strings.IndexFunc(m, unicode.IsControl); i >= 0 {
		return invalid("metadata %q holds a control character at byte %d; pass text on one line, without tabs or newlines", m, i)
	}
	return nil
}

// tokenPart splits s into a token from crypto/rand.Text with its
// metadata tag, if any, and the rest of s; ok is false when s starts
// with no token.
func tokenPart(s string) (token, rest string, ok bool) {
	if len(s) < 26 || !isToken(s[:26]) {
		return "", "", false
	}
	rest = s[26:]
	if rest != "" && rest[0] == metaOpen {
		j := strings.IndexByte(rest, metaClose)
		if j < 2 || strings.Trim(rest[1:j], "0123456789abcdef") != "" || (j-1)%2 != 0 || (j-1)/2 > MaxMetadata {
			return "", "", false
		}
		rest = rest[j+1:]
	}
	return s[:len(s)-len(rest)], rest, true
}

// isHolderToken reports whether s is a token from crypto/rand.Text,
// followed by a metadata tag where the lease has metadata.
func isHolderToken(s string) bool {
	_, rest, ok := tokenPart(s)
	return ok && rest == ""
}
