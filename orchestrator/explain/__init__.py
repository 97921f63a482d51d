"""Why a culprit regressed: what its measured runs show beyond the bisected metric
(docs/explain.md). changed: every recorded metric, parent against culprit, tested (pure);
render: its Markdown, HTML and mail forms (pure); gather: the confirmation's runs from the
store. The kernel profile: profile_boots (the boots under perf record after the answer),
perfscript (perf script -> folded stacks, pure), profile (shares and the rows that moved, pure),
profile_render (Markdown, HTML, JSON), profile_stored (the stored row for the reports)."""
