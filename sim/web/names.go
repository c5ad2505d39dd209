package web

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// Word lists for the name generator. Every name is built from these lists
// with the world's seeded generator, so names never contain " of " or a
// period and always start with a capital letter.
var (
	syllables = []string{
		"ka", "vel", "mor", "dra", "lin", "sor", "tha", "ven", "ri", "ol",
		"an", "bre", "cal", "dun", "el", "fa", "gor", "hal", "is", "jen",
		"kor", "lu", "mar", "nes", "ora", "pra", "quel", "ros", "sa", "tor",
		"ul", "vix", "wen", "yor", "zel", "bar", "cen", "dor", "ev", "fin",
	}
	orgSuffixes = []string{
		"Labs", "Systems", "Works", "Holdings", "Industries", "Partners",
		"Motors", "Foods", "Logistics", "Media", "Press", "Studios",
		"Capital", "Energy",
	}
	industries = []string{
		"shipping", "software", "publishing", "textiles", "mining", "banking",
		"aerospace", "agriculture", "biotechnology", "retail", "media", "energy",
	}
	occupations = []string{
		"engineer", "novelist", "architect", "economist", "journalist",
		"chemist", "painter", "historian", "lawyer", "composer",
	}
	workAdjectives = []string{
		"Silver", "Hollow", "Quiet", "Burning", "Distant", "Crimson", "Broken",
		"Golden", "Northern", "Silent", "Wandering", "Paper", "Iron", "Velvet",
		"Frozen", "Hidden", "Last", "Bright", "Salt", "Glass", "Amber",
		"Winter", "Lonely", "Shattered", "Emerald",
	}
	workNouns = []string{
		"Tide", "Crown", "Harbor", "Garden", "River", "Lantern", "Orchard",
		"Mirror", "Compass", "Meridian", "Archive", "Feather", "Engine",
		"Cathedral", "Valley", "Signal", "Horizon", "Letters", "Season", "Atlas",
	}
	genres = []string{
		"mystery", "science fiction", "historical fiction", "poetry", "memoir",
		"fantasy", "thriller", "drama",
	}
	citySuffixes   = []string{"", "", "", "ton", "burg", "haven", "mouth", "ford"}
	countryEndings = []string{"ia", "land", "ara", "esh", "ovia"}
	denominations  = []string{"crown", "mark", "florin", "dollar", "shilling"}
	vowelSwap      = map[byte]byte{'a': 'o', 'e': 'a', 'i': 'e', 'o': 'u', 'u': 'i'}
)

// namer draws unique names from the word lists. It is used only while a
// world is generated and is not safe for concurrent use.
type namer struct {
	rng  *rand.Rand
	used map[string]bool
}

func newNamer(rng *rand.Rand) *namer {
	return &namer{rng: rng, used: make(map[string]bool)}
}

func (n *namer) pick(list []string) string { return list[n.rng.IntN(len(list))] }

// root returns a capitalized word of k syllables.
func (n *namer) root(k int) string {
	var b strings.Builder
	for range k {
		b.WriteString(n.pick(syllables))
	}
	return capitalize(b.String())
}

// unique calls gen until it yields an unused name. After many collisions it
// appends a syllable word, which always terminates because the space of such
// words grows without bound.
func (n *namer) unique(gen func() string) string {
	for i := 0; ; i++ {
		name := gen()
		if i > 50 {
			name += " " + n.root(2+i/100)
		}
		if !n.used[name] {
			n.used[name] = true
			return name
		}
	}
}

// claim marks name as used and reports whether it was free.
func (n *namer) claim(name string) bool {
	if n.used[name] {
		return false
	}
	n.used[name] = true
	return true
}

func (n *namer) orgName() string {
	return n.unique(func() string { return n.root(2+n.rng.IntN(2)) + " " + n.pick(orgSuffixes) })
}

func (n *namer) personName() string {
	return n.unique(func() string { return n.root(2) + " " + n.root(2+n.rng.IntN(2)) })
}

func (n *namer) workName() string {
	return n.unique(func() string { return n.pick(workAdjectives) + " " + n.pick(workNouns) })
}

func (n *namer) cityName() string {
	return n.unique(func() string { return n.root(2+n.rng.IntN(2)) + n.pick(citySuffixes) })
}

func (n *namer) countryName() string {
	return n.unique(func() string { return n.root(2) + n.pick(countryEndings) })
}

func (n *namer) currency() string {
	return n.root(2) + " " + n.pick(denominations)
}

// population returns a city population written with thousands separators,
// as a reader would see it on a page.
func (n *namer) population() string {
	return groupThousands(20_000 + n.rng.IntN(3_000_000))
}

// variants lists near-duplicate names of an entity, most confusable first:
// the names a careless reader or a weak ranker could mistake for it.
func variants(k kind, name string) []string {
	first, rest, _ := strings.Cut(name, " ")
	switch k {
	case kindOrg:
		out := []string{name + " Group"}
		if s := strings.TrimSuffix(name, "s"); s != name && !strings.HasSuffix(s, "ie") {
			out = append(out, s)
		}
		return append(out, swapVowel(first)+" "+rest, name+" International")
	case kindPerson:
		return []string{first + " " + rest + "e", swapVowel(first) + " " + rest, name + " Jr"}
	case kindWork:
		out := []string{name + " Returns"}
		if !strings.HasSuffix(name, "s") {
			out = append(out, name+"s")
		}
		return append(out, name+" II")
	case kindCity:
		return []string{"New " + name, name + " Heights", "Port " + name}
	}
	return nil
}

// swapVowel changes the first vowel after the initial letter, turning
// "Velmora" into "Valmora".
func swapVowel(s string) string {
	b := []byte(s)
	for i := 1; i < len(b); i++ {
		if r, ok := vowelSwap[b[i]]; ok {
			b[i] = r
			return string(b)
		}
	}
	return s + "a"
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func groupThousands(v int) string {
	s := strconv.Itoa(v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// slugify turns a name into a lowercase, hyphenated path segment.
func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			b.WriteRune(c)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}
