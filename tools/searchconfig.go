package tools

// SearchSettings configure the executors. web tools as a run's
// configuration holds them (its search key, read by the composition root).
type SearchSettings struct {
	Provider   string   `yaml:"provider" flag:"search-provider" doc:"{providers}"`
	URL        string   `yaml:"url" flag:"search-url" doc:"provider base {{URL}} override"`
	Index      string   `yaml:"index" doc:"index directory of the local provider"`
	AllowHosts []string `yaml:"allow_hosts" flag:"allow-host,append" doc:"{{host[:port]}}s (host or host:port) visit may fetch despite the SSRF guard"`
	MaxQueries int      `yaml:"max_queries" doc:"queries per search call"`
	Results    int      `yaml:"results" doc:"results per query"`
	Rate       float64  `yaml:"rate" doc:"provider requests per second (0: unlimited)"`
}
