from .main import run_main

run_main()
