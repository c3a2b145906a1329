// The HTTP server of benches/http.sh on Go's net/http, the service of benches/http/service.rs:
// GET /plaintext answers "Hello, World!" (text/plain), GET /json {"message":"Hello, World!"}
// (application/json, json.Marshal per request), anything else 404. http.Serve's defaults: a
// goroutine per connection, no timeouts. Run with GOMAXPROCS=2, as the script does.
//
// Usage: httpserver [ADDR] (default 127.0.0.1:0, a free port); the first line on stdout is
// http://ADDR.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
)

type message struct {
	Message string `json:"message"`
}

func plaintext(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	io.WriteString(w, "Hello, World!")
}

func jsonHandler(w http.ResponseWriter, r *http.Request) {
	body, err := json.Marshal(&message{Message: "Hello, World!"})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

func main() {
	addr := "127.0.0.1:0"
	if len(os.Args) > 1 {
		addr = os.Args[1]
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("http://%s\n", ln.Addr())
	mux := http.NewServeMux()
	mux.HandleFunc("/plaintext", plaintext)
	mux.HandleFunc("/json", jsonHandler)
	log.Fatal(http.Serve(ln, mux))
}
