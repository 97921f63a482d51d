"""Why a culprit regressed: what its measured runs show beyond the bisected metric
(docs/explain.md). changed: every recorded metric, parent against culprit, tested (pure);
render: its Markdown, HTML and mail forms (pure); gather: the confirmation's runs from the
store."""
