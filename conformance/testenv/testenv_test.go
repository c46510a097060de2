package testenv

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// TestRig checks that scripts/servers.sh delivered what the integration tests
// rely on: the right number of servers, each answering PING.
func TestRig(t *testing.T) {
	for _, tc := range []struct {
		name  string
		addrs func(testing.TB) []string
		want  int
	}{{"Nodes", Nodes, 5}, {"Cluster", Cluster, 3}, {"ValkeyNodes", ValkeyNodes, 5}} {
		t.Run(tc.name, func(t *testing.T) {
			addrs := tc.addrs(t)
			if len(addrs) != tc.want {
				t.Fatalf("got %d addresses %v, want %d", len(addrs), addrs, tc.want)
			}
			for _, a := range addrs {
				c, err := net.DialTimeout("tcp", a, 2*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				c.SetDeadline(time.Now().Add(2 * time.Second))
				c.Write([]byte("PING\r\n"))
				line, err := bufio.NewReader(c).ReadString('\n')
				c.Close()
				if line != "+PONG\r\n" {
					t.Fatalf("%s: PING answered %q, %v", a, line, err)
				}
			}
		})
	}
}
