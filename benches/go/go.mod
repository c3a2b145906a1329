module goro-bench

go 1.19
