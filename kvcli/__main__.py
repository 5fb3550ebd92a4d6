from kvcli.app import main

main()
