"""``python -m mimesis_pl.shim`` is ``mimesis-pl shim``."""

from mimesis_pl.shim.serve import main

raise SystemExit(main())
