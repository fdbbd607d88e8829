module flcrash

go 1.19
