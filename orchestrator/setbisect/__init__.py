"""Bisection of what is not a commit: between a good side and a bad side that differ in named
changes (kernel command-line parameters, guest settings, groups of Kconfig options), the
smallest set of changes that moves the metric from good to bad, judged with the engine's
statistics on boots through the one judge (orchestrator/measure/judge.py).

    model.py        the changes, the units the search adds or removes, candidate keys, and
                    the CandidateMaker protocol: how a candidate's kernel and guest settings
                    are made
    search.py       the pure search (divide and conquer with interactions, ddmin's shape)
                    over an oracle "does good + this subset move the metric?"
    judged.py       candidates as judge keys: the judge's builder and measurer over a maker
    setbisection.py the campaign on the campaign shell: endpoints, the search through the
                    judge, the confirmation, every decision stored as it happens, resumable
    settings.py     the `settings` kind's changes: kernel command line and guest settings
    campaign.py     the `settings` kind's campaign file
    configspec.py   the `config` kind's campaign file; configsides.py its two sides at the
                    commit; configmaker.py its candidates; configrun.py its run
The reports of a stored set bisection are orchestrator/report/sets.py.
"""
