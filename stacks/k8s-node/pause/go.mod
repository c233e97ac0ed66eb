module pytest-stacks.invalid/pause

go 1.24
