from jetbench.cli import main

raise SystemExit(main())
