from plait.cli.startup import main

main()
