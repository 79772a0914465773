public import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads the elements of one JSON array in a file, one element at a time, without loading the file: the reader for
/// vendor exports of any size (`{"results":[{...},{...}]}`). Memory holds one element and one read buffer.
///
/// ```swift
/// var reader = try JSONArrayFileReader(url: url, member: "results")
/// while let element = try reader.next() { print(element.line, element.value) }
/// ```
///
/// Each element comes with the line it starts on and the byte offset where it starts, so that errors name the line
/// and a reader can resume at an element (``init(url:resumingAt:line:)``). Malformed input is a
/// ``JSONArrayFileReader/Failure`` naming the line the problem is on (inside an element over many lines, the line of
/// the bad member, not the element's first).
public struct JSONArrayFileReader {
    /// An element of the array.
    public struct Element {
        public var value: JSON
        /// The 1-based line the element starts on.
        public var line: Int
        /// The byte offset the element starts at.
        public var offset: Int64
        /// The byte offset just past the element (where a resumed reader starts).
        public var endOffset: Int64
        /// The line `endOffset` is on (what a resumed reader is given with it; an element may span lines).
        public var endLine: Int
    }

    /// What is wrong with the file, and on which line.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var line: Int
        public var message: String
        public var description: String { "line \(line): \(message)" }
    }

    private let handle: FileHandle
    /// The bytes read and not yet consumed start at `position`; `buffer[0]` is at file offset `bufferStart`.
    private var buffer: [UInt8] = []
    private var position = 0
    private var bufferStart: Int64 = 0
    private var line = 1
    private var atEOF = false
    private var inArray = false
    private var finished = false
    /// What must follow the array's closing bracket, checked when it is reached.
    private var end: End = .unchecked
    private enum End {
        /// A reader resumed without saying where the array is: the rest of the file is not its to check.
        case unchecked
        /// The array is the file: nothing but white space after it.
        case file
        /// The array is `member` of the top-level object, whose other member names so far are `seen`: members that
        /// come after it (each once, `member` never again), the closing brace, then white space.
        case object(member: String, seen: Set<String>)
    }
    /// Whether an element was read (so the next one needs a comma before it).
    private var afterElement = false
    /// Bytes asked of the file per read: one `pread` per MiB, however small the elements.
    private static let chunkSize = 1 << 20

    /// Opens `url`; with `member`, the array is that member of the top-level object, else the top-level value.
    public init(url: URL, member: String?) throws {
        handle = try FileHandle(forReadingFrom: url)
        try seekArray(member: member)
    }

    /// Opens `url` positioned at an element boundary returned earlier as ``Element/endOffset``, with its
    /// ``Element/endLine``, inside the array. What follows the array is not checked (see
    /// ``init(url:resumingAt:line:member:)``).
    public init(url: URL, resumingAt offset: Int64, line: Int) throws {
        handle = try FileHandle(forReadingFrom: url)
        bufferStart = offset   // reads are positioned (`pread`): nothing to seek
        self.line = line
        inArray = true
        afterElement = true
    }

    /// As ``init(url:resumingAt:line:)``, for the array that `member` of the top-level object is (the top-level
    /// value with `nil`): what follows the array is checked as ``init(url:member:)`` checks it, except for the names
    /// of members before the array, which a resumed reader has not seen.
    public init(url: URL, resumingAt offset: Int64, line: Int, member: String?) throws {
        try self.init(url: url, resumingAt: offset, line: line)
        end = member.map { .object(member: $0, seen: [$0]) } ?? .file
    }

    public func close() { try? handle.close() }

    /// Where the reader stands after the elements read so far, as ``Element/endOffset`` and ``Element/endLine`` of
    /// the last one: what ``init(url:resumingAt:line:)`` resumes from, also after ``nextRaw()``.
    public var resumePoint: (offset: Int64, line: Int) { (bufferStart + Int64(position), line) }

    /// The next element, or `nil` after the closing bracket.
    public mutating func next() throws -> Element? {
        guard let (startLine, startOffset, end, newlines) = try nextBounds() else { return nil }
        // Parsed where it lies in the read buffer: no copy of the element's bytes.
        let result = buffer.withUnsafeBufferPointer { all in
            Result { () throws(JSONParseError) in try JSON.parse(bytes: UnsafeBufferPointer(rebasing: all[position..<end])) }
                .mapError { e in Failure(line: Self.line(of: e.offset, in: UnsafeBufferPointer(rebasing: all[position..<end]), from: startLine),
                                         message: "\(e)") }
        }
        let value = try result.get()
        consume(to: end, newlines: newlines)
        return Element(value: value, line: startLine, offset: startOffset, endOffset: bufferStart + Int64(position), endLine: line)
    }

    /// An element's bytes, not yet parsed: what a reader hands to other threads to parse (``parse()``).
    public struct RawElement: Sendable {
        /// The element's JSON text, as it is in the file.
        public var bytes: [UInt8]
        /// The 1-based line the element starts on.
        public var line: Int

        /// The element's value; malformed JSON is a ``JSONArrayFileReader/Failure`` naming the element's line.
        public func parse() throws(Failure) -> JSON {
            do { return try bytes.withUnsafeBufferPointer { b throws(JSONParseError) in try JSON.parse(bytes: b) } } catch {
                throw Failure(line: bytes.withUnsafeBufferPointer { JSONArrayFileReader.line(of: error.offset, in: $0, from: line) },
                              message: "\(error)")
            }
        }
    }

    /// The line byte `offset` of an element is on, for an element that starts on line `start`: where a parse error
    /// is, not where its element began (an object over many lines names the line of its bad member).
    static func line(of offset: Int, in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        start + bytes.prefix(max(0, min(offset, bytes.count))).reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
    }

    /// The next element's bytes without parsing them, or `nil` after the closing bracket. The array's own syntax
    /// (commas, the closing bracket, a value cut off by the end of the file) is checked here; the element's is
    /// checked by ``RawElement/parse()``.
    public mutating func nextRaw() throws -> RawElement? {
        guard let (startLine, _, end, newlines) = try nextBounds() else { return nil }
        let bytes = Array(buffer[position..<end])
        consume(to: end, newlines: newlines)
        return RawElement(bytes: bytes, line: startLine)
    }

    /// Moves past an element that ends at `end` (an index into `buffer`) with `newlines` line breaks inside it.
    private mutating func consume(to end: Int, newlines: Int) {
        position = end
        line += newlines
        afterElement = true
    }

    /// Skips white space and the comma before the next element, and finds where it ends (the position stays at its
    /// start); `nil` after the closing bracket.
    private mutating func nextBounds() throws -> (line: Int, offset: Int64, end: Int, newlines: Int)? {
        guard !finished else { return nil }
        var sawComma = false
        while true {
            guard let b = try peek() else { throw failure("the file ends inside the array (a ']' is missing)") }
            if b == UInt8(ascii: "]") {
                if sawComma { throw failure("a ',' before the array's closing ']'") }
                advance()
                finished = true
                try checkEnd()
                return nil
            } else if b == UInt8(ascii: ",") {
                if sawComma { throw failure("two commas in a row") }
                if !afterElement { throw failure("a ',' before the array's first element") }
                sawComma = true
                advance()
            } else if Self.isSpace(b) {
                advance()
            } else {
                if afterElement && !sawComma { throw failure("a ',' is missing between two elements") }
                break
            }
        }
        let startLine = line
        let startOffset = bufferStart + Int64(position)
        let (end, newlines) = try valueEnd()
        return (startLine, startOffset, end, newlines)
    }

    // MARK: Scanning

    private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 }

    private func failure(_ message: String) -> Failure { Failure(line: line, message: message) }

    /// Reads the next chunk after what the buffer holds (keeping the unconsumed bytes); `false` at the end of the file.
    private mutating func fill() throws -> Bool {
        if atEOF { return false }
        if position > 0 && position >= buffer.count / 2 {
            buffer.removeSubrange(0..<position)
            bufferStart += Int64(position)
            position = 0
        }
        let fd = handle.fileDescriptor
        let offset = bufferStart + Int64(buffer.count)
        // Read into a new, uninitialised chunk and append it whole (a copy of contiguous bytes). Growing the buffer
        // by a megabyte of zeros first went element by element through a generic sequence: in a debug build that
        // was most of the test run's CPU time, paid twice for every small file (the read, then the end).
        var n = 0
        let chunk = [UInt8](unsafeUninitializedCapacity: Self.chunkSize) { bytes, count in
            repeat {
                n = pread(fd, bytes.baseAddress!, Self.chunkSize, off_t(offset))
            } while n < 0 && errno == EINTR
            count = max(n, 0)
        }
        guard n >= 0 else {
            let message = String(cString: strerror(errno))
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "read failed: \(message)"])
        }
        buffer.append(contentsOf: chunk)
        if n == 0 { atEOF = true; return false }
        return true
    }

    private mutating func peek() throws -> UInt8? {
        while position >= buffer.count { if !(try fill()) { return nil } }
        return buffer[position]
    }

    private mutating func advance() {
        if buffer[position] == 0x0A { line += 1 }
        position += 1
    }

    private mutating func skipSpace() throws {
        while let b = try peek(), Self.isSpace(b) { advance() }
    }

    /// The end (an index into `buffer`) of the JSON value starting at `position`, and the line breaks inside it;
    /// reads more of the file until the value is complete. Strings, containers and scalars; the value's own syntax
    /// is checked when it is parsed.
    private mutating func valueEnd() throws -> (end: Int, newlines: Int) {
        while true {
            let found: (end: Int, newlines: Int)? = buffer.withUnsafeBufferPointer { bytes in
                var depth = 0, newlines = 0
                var inString = false, escaped = false
                var i = position
                while i < bytes.count {
                    let b = bytes[i]
                    if inString {
                        if escaped { escaped = false } else if b == UInt8(ascii: "\\") { escaped = true } else if b == UInt8(ascii: "\"") {
                            inString = false
                            if depth == 0 { return (i + 1, newlines) }
                        }
                    } else {
                        switch b {
                        case UInt8(ascii: "\""): inString = true
                        case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                        case UInt8(ascii: "}"), UInt8(ascii: "]"):
                            if depth == 0 { return (i, newlines) }   // a scalar ends at the enclosing array's end
                            depth -= 1
                            if depth == 0 { return (i + 1, newlines) }
                        case UInt8(ascii: ","):
                            if depth == 0 { return (i, newlines) }
                        case 0x0A:
                            if depth == 0 { return (i, newlines) }
                            newlines += 1
                        case 0x20, 0x0D, 0x09:
                            if depth == 0 { return (i, newlines) }
                        default: break
                        }
                    }
                    i += 1
                }
                return nil
            }
            if let found { return found }
            // The value runs past what was read: read more and scan it again from its start (once per chunk).
            if !(try fill()) {
                let inside = buffer.count > position && (buffer[position] == UInt8(ascii: "{") || buffer[position] == UInt8(ascii: "[")
                                                        || buffer[position] == UInt8(ascii: "\""))
                if inside { throw failure("the file ends inside a value") }
                return (buffer.count, 0)
            }
        }
    }

    /// The bytes of one JSON value starting at the current position (a member name or a skipped member).
    private mutating func takeValue() throws -> [UInt8] {
        let (end, newlines) = try valueEnd()
        let bytes = Array(buffer[position..<end])
        position = end
        line += newlines
        return bytes
    }

    /// Checks what follows the array's closing bracket (``End``): nothing in the file is left unread, and the array is
    /// the only member of its name.
    private mutating func checkEnd() throws {
        guard case .object(let member, var seen) = end else {
            if case .file = end { try expectNothingMore() }
            return
        }
        while true {
            try skipSpace()
            guard let b = try peek() else { throw failure("the file ends before the top-level object's closing '}'") }
            if b == UInt8(ascii: "}") { advance(); break }
            guard b == UInt8(ascii: ",") else { throw failure("expected ',' or '}' after the \"\(member)\" array") }
            advance()
            let key = try memberName(seen: &seen)
            try skipMemberValue(key)
        }
        try expectNothingMore()
    }

    /// Only white space is left in the file.
    private mutating func expectNothingMore() throws {
        try skipSpace()
        if try peek() != nil { throw failure("unexpected characters after the top-level value") }
    }

    /// A member name of the top-level object and its colon, the reader left at the value; a name in `seen` (the
    /// object's names so far, to which it is added) is an error.
    private mutating func memberName(seen: inout Set<String>) throws -> String {
        try skipSpace()
        let keyLine = line
        guard try peek() == UInt8(ascii: "\"") else { throw failure("expected a member name") }
        let keyBytes = try takeValue()
        let parsed: JSON
        do { parsed = try JSON.parse(Data(keyBytes)) } catch { throw failure("invalid member name: \(error)") }
        guard case .string(let key) = parsed else { throw failure("expected a member name") }
        try skipSpace()
        guard try peek() == UInt8(ascii: ":") else { throw failure("expected ':' after \"\(key)\"") }
        advance()
        try skipSpace()
        if !seen.insert(key).inserted { throw Failure(line: keyLine, message: "the top-level object has a second \"\(key)\" member") }
        return key
    }

    /// A member's value other than the array's: read and checked (it is not kept), an error naming the member.
    private mutating func skipMemberValue(_ key: String) throws {
        let valueLine = line
        let value = try takeValue()
        do { _ = try JSON.parse(Data(value)) } catch { throw Failure(line: valueLine, message: "\"\(key)\": \(error)") }
    }

    /// Positions the reader just inside the array.
    private mutating func seekArray(member: String?) throws {
        try skipSpace()
        if member == nil {
            guard try peek() == UInt8(ascii: "[") else { throw failure("expected a JSON array") }
            advance()
            inArray = true
            end = .file
            return
        }
        guard try peek() == UInt8(ascii: "{") else { throw failure("expected a JSON object with a \"\(member!)\" array") }
        advance()
        var seen: Set<String> = []
        while true {
            try skipSpace()
            guard let b = try peek() else { throw failure("the file ends before a \"\(member!)\" member") }
            if b == UInt8(ascii: "}") { throw failure("the top-level object has no \"\(member!)\" member") }
            if b == UInt8(ascii: ",") { advance(); continue }
            guard b == UInt8(ascii: "\"") else { throw failure("expected a member name") }
            let key = try memberName(seen: &seen)
            if key == member {
                guard try peek() == UInt8(ascii: "[") else { throw failure("\"\(key)\" is not an array") }
                advance()
                inArray = true
                end = .object(member: key, seen: seen)
                return
            }
            try skipMemberValue(key)
        }
    }
}
