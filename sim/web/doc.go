// Package web is mgrpo's synthetic web: a seeded, offline stand-in for the
// open web and for the search APIs deep-research agents call. Use it to test
// an agent, a search tool or a page fetcher without the internet.
//
// # Generating a world
//
// Generate builds a world from a Config. Everything derives from the seed,
// so the same Config always yields the same sites, pages, facts and
// questions:
//
//	w, err := web.Generate(web.Config{Seed: 7})
//	if err != nil { … }
//	q := w.Questions[0]
//	fmt.Println(q.Question) // What is the birthplace of the founder of Velmora Labs?
//	fmt.Println(q.Answer)
//
// A world holds a dozen themed sites (business, culture, geography). Each
// has a home page, an about page, one section per kind of entity, letter
// group index pages for large sections and one page per entity, so
// evidence sits one to three clicks below the site's root. Entities are
// organizations, people, creative works, cities and countries, linked by
// typed relations (an organization's founder is a person, a person's
// birthplace is a city, …). An entity page states each fact once, in the
// grammar of FactSentence ("The founder of Velmora Labs is Ida Kestrel."),
// inside prose, next to a cookie banner, navigation, advertisements,
// related links and a footer, so extracting the main content is real work.
// Near-duplicate distractors ("Velmora Labs Group") carry different facts:
// a careless reader or a weak ranking picks the wrong one. One subject and
// relation have exactly one object across the whole web.
//
// Questions chain one to three relations from a real entity (QuestionText);
// each hop's fact is on the page listed in EvidencePaths, reachable by links
// from RootPath. Question n of a seed does not depend on how many questions
// were asked for, and the pages do not depend on it at all.
//
// # Searching and serving
//
// World.Search ranks pages with BM25 over titles and visible text.
// World.Handler serves the web over HTTP with two search APIs:
//
//	srv := httptest.NewServer(w.Handler())   // or http.ListenAndServe(addr, w.Handler())
//	// Serper-shaped:  POST /search  {"q": "Velmora Labs founder", "num": 5}
//	//                 → {"searchParameters": …, "organic": [{title, link, snippet, position}], "credits": 1}
//	// SearXNG-shaped: GET /search?q=Velmora+Labs+founder&format=json&pageno=1
//	//                 → {"query", "number_of_results", "results": [{url, title, content, …}], …}
//	// pages:          GET /site/<slug>/…   and GET / for the list of sites
//
// Point a Serper client's base URL, or a SearXNG client's instance URL, at
// the server. Pass WithAPIKey to require a Serper X-API-KEY.
//
// # Task files
//
// WriteTasks writes questions as JSON Lines in the project's generic
// format, in GAIA's metadata.jsonl layout, or in WebWalkerQA's layout. URLs
// in those files start with PlaceholderBaseURL ("http://web.sim"); a served
// world serves the same paths, so Rebase(u, serverURL) turns a file's URL
// into a live one. Serve the world generated from the same Seed and Sites
// as the task file.
package web
