package llm

// vocabWords are whole words of the simulated vocabulary. Each gets four
// pieces: as written and capitalised, each with and without a leading space.
// The list favours the words agents, prompts and the synthetic web use, so
// token counts are realistic (about four characters a token on English).
const vocabWords = `
a about above according across after again against all also always am among an and another answer answers any
are around as ask asked at available back based be because been before being below best between both brief
but by call called calls can cannot check city claim clear complete confirm context could country current
data date day did different do does done down during each early either else end enough evidence exactly
fact facts few final find first following for found from function functions further gather get give given go
goal good had has have he her here his how however i if important in information into is it its itself just
know known last later least less let like list little long look made main make many may me might more most
much must my name named need new next no not note nothing now number of off on once one only or order other
our out over own page pages part people per place plan please point possible previous provide question
questions read really reason report research result results right said same search see seems should show
since single so some source sources start state step still subtask such summary sure take task tell than that
the their them then there these they thing think this those three through time to today too tool tools top
two under until up upon us use used user using very visit want was way we well were what when where which
while who why will with within without word words would year yes yet you your
founder founded founding headquarters author publisher release released director mayor population birthplace
birth employer employed chief executive engineer company organization organisation labs group institute
university museum press studio records foundation society works book novel film album born based located
capital river street north south east west new old home news about contact privacy terms cookies accept
advertisement sponsored menu navigation footer copyright rights reserved related articles read more
delegate executor planner query queries url urls assistant system content role type object string array
properties required description parameters arguments true false null
`

// vocabFragments are sub-word pieces (name syllables, suffixes, URL parts)
// that let unknown words encode in a few tokens instead of one per byte.
const vocabFragments = `
ar el or an en ra ri ro to va la mo ve ka ston ford ton ia ea er in on at is it al le re de te ne se ce
ing ed ly tion ment ness able ous ive ers est ist ism ity al ic ical ful less ship ward wood land field
berg burg ville port haven mont dale brook stone water well gate hill shire vale mere moor worth ley
vel mor ora kes trel ida ori lan dor mar tal ven sil ver tide ash bri gal hal jor kal lor mel nor pel
quin ris sar tor ul vor wyn xan yor zel http https www com org net sim html json md txt pdf
`

// markupPieces are punctuation, markup and whitespace runs frequent in chat
// templates, JSON arguments, Markdown and HTML. Each lies within one
// pre-token class (see preTokenLen), since a piece spanning two classes could
// never match.
var markupPieces = []string{
	"\n\n", "\n\n\n", "  ", "    ", "\t", " \n",
	"{\"", "\":", "\",", "\"}", "\"]", "[\"", "\"]}", "}}", "{}", "[]", "\"}}", "...", "--", "->", "=>",
	"**", "##", "###", "](", "://", "/>", "</", "<!", "\">", "=\"", "()", "(\"", "\")", ".\"", "?\"",
	" {\"", " \"", " [\"", " (", " -", " [", " **", " #", " ##", " |", " =",
}
