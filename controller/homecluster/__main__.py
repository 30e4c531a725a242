from homecluster.cli import main

raise SystemExit(main())
