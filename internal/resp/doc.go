// Package resp is the wire layer of bloomery serve: it reads commands in
// the Redis protocol and writes replies in RESP2 or RESP3.
//
// # What it guarantees
//
//   - Redis's grammar, Redis's errors. Reader accepts what redis-server 7.0
//     accepts, in both forms Redis reads: arrays of bulk strings
//     ("*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n", what every client library
//     sends) and inline commands ("ECHO \"hi\\x21\"\r\n", what people type
//     into telnet), with Redis's quoting rules for inline: double quotes
//     with \n \r \t \b \a \xHH and \<any> escapes, single quotes with \'
//     only. It also keeps Redis's leniencies: the byte after a count line's
//     '\r' and the two bytes after a bulk string are skipped unchecked, a
//     zero or negative array count ("*0", "*-1") and an empty or blank
//     inline line are skipped. Anything else is a *ProtocolError whose
//     text is Redis's own (see the constants in errors.go); the server
//     answers it with "-ERR <text>" and closes the connection, as Redis
//     does. The table of cases in redis_test.go is run against a real
//     redis-server as well.
//   - Bounded memory. Every length a client declares is checked against
//     Limits before it is used, and never paid for in advance: a bulk
//     string declared as 500 MB grows the argument buffer as its bytes
//     arrive, so the buffer of a command never holds more than twice the
//     bytes the client has actually sent for it plus 64 KiB, and the slice
//     of arguments grows with the arguments received up to MaxArgs. A
//     Reader keeps at most 64 KiB of buffer once its connection is idle.
//   - No allocation in the steady state: ReadCommand reuses its argument
//     buffer and the caller's slice of arguments; Writer formats numbers
//     into a scratch array. Both are measured by allocation tests.
//   - Aliasing: the arguments ReadCommand returns point into the Reader's
//     buffer and stay valid only until the next ReadCommand. Copy what
//     must outlive the command (a key stored in a map, for example).
//
// # Where it is stricter than Redis
//
// Redis checks a line's length only when a read leaves the line without
// its terminator, so whether it accepts a line longer than 64 KiB depends
// on how the bytes were split into reads; Reader always refuses one (as
// Redis does when the bytes arrive slowly). Redis applies its query buffer
// limit to the bytes not yet parsed; Reader applies MaxQueryBuffer to the
// whole command, the memory a command really holds here, so a command of
// several arguments that together pass 1 GiB is refused. MaxArgs defaults
// to 1<<20 arguments (Redis 6.2's limit) where Redis 7.0 allows 2^31-1.
//
// # Concurrency
//
// A Reader and a Writer each belong to one connection and are not safe
// for concurrent use; a connection's Reader and Writer are independent of
// each other and may be used from different goroutines.
package resp
