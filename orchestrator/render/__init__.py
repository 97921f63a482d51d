"""The HTML and inline-SVG renderer shared by the bisection and the comparison reports."""
