"""What a campaign hands back: the report of a commit bisection (markdown, HTML), of a set
bisection, and the Reproduce section every output carries."""
