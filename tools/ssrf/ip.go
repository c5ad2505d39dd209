// Package ssrf guards outbound fetches that a model can steer. It refuses
// every URL whose host is, or resolves to, an address that is not on the
// public Internet (loopback, private, link-local, CGNAT, multicast,
// unspecified, IPv4-mapped and other special ranges), checks again at dial
// time on the address actually connected (so DNS rebinding fails) and on
// every redirect hop, and refuses numeric host spellings such as
// http://2130706433/ or http://0x7f.1/. An explicit allow-list opens named
// hosts, for local corpora and the simulated web.
package ssrf

import (
	"net/netip"
)

// blocked lists the prefixes the guard refuses, with the reason reported.
var blocked = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT address"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local address"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation address"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation address"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved address"},
	{netip.MustParsePrefix("::1/128"), "loopback address"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible or unspecified address"},
	{netip.MustParsePrefix("::ffff:0:0/96"), "IPv4-mapped address"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64 address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64 address"},
	{netip.MustParsePrefix("100::/64"), "discard-only address"},
	{netip.MustParsePrefix("2001::/32"), "Teredo address"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation address"},
	{netip.MustParsePrefix("2002::/16"), "6to4 address"},
	{netip.MustParsePrefix("fc00::/7"), "unique-local (private) address"},
	{netip.MustParsePrefix("fe80::/10"), "link-local address"},
	{netip.MustParsePrefix("fec0::/10"), "site-local address"},
	{netip.MustParsePrefix("ff00::/8"), "multicast address"},
}

// CheckAddr returns nil when addr is a public unicast address and a
// *RefusedError naming the range otherwise. IPv4-mapped IPv6 forms are
// refused as such, never unmapped, so that ::ffff:127.0.0.1 cannot slip
// through a check written for IPv6.
func CheckAddr(addr netip.Addr) error {
	if !addr.IsValid() {
		return &RefusedError{Reason: "invalid address"}
	}
	a := addr.WithZone("")
	if a.IsUnspecified() {
		return &RefusedError{Addr: a.String(), Reason: "unspecified address"}
	}
	if a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return &RefusedError{Addr: a.String(), Reason: "broadcast address"}
	}
	for _, b := range blocked {
		if b.prefix.Contains(a) {
			return &RefusedError{Addr: a.String(), Reason: b.reason}
		}
	}
	return nil
}
