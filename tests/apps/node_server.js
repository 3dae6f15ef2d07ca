// A Node http server: prints its port, serves until killed.
const http = require('http');
const server = http.createServer((req, res) => res.end('ok'));
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
