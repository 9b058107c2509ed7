module github.com/writhq/writ

go 1.26
