"""Memory in and out as files: one item as a markdown file, `memctl export --markdown` and
`memctl import --markdown`, and the manifest of an export folder."""
