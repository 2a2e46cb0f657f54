from cudaswitch.fastpath import main

raise SystemExit(main())
