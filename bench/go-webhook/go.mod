module volcano-plugin-webhook/bench/go-webhook

go 1.19
