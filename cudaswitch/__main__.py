from cudaswitch.cli.main import main

raise SystemExit(main())
