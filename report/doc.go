// Package report renders what a human or an agent reads about the store:
// the morning report (markdown, HTML through goldmark with raw HTML off,
// and JSON) and the side-by-side comparison of two runs. It owns the
// report's layout and wording and the goldmark setup.
//
// It never writes the ledger or any file (ops writes the rendered bytes),
// never reads git, and takes the clock as a value: rendering the same
// records at the same time gives the same bytes.
package report
