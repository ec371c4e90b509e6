from ballast.cli.main import run

run()
