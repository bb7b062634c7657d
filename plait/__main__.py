from plait.cli.app import main

main()
