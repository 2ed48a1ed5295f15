"""Tools built on the resolver's core: each runs many resolutions, or reads the rule pack, for people who
maintain rules or run fleets.

- :mod:`.lint` checks a rule pack (static checks, and :mod:`.sweep`'s exhaustive resolutions);
- :mod:`.matrix` draws the compatibility tables (docs/compatibility.md);
- :mod:`.diff` lists the requests whose outcome changes between two rule directories;
- :mod:`.batch` resolves JSON Lines requests (``resolve --batch``);
- :mod:`.docgen` writes docs/options.md from the rule pack;
- :mod:`.jobs` runs their many resolutions on several processes, with a progress bar.

The core they build on (rule files -> loader -> compiler -> engine -> resolution -> explain and fixes,
behind :mod:`resolver.api`) imports nothing from here.
"""
