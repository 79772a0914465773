import Foundation
import MBaaSCore

/// Reads a newline-delimited JSON file one line at a time, from the start or from a byte offset, with flat memory.
struct NDJSONReader {
    struct Line {
        var value: JSON
        /// 1-based line number (counted from where the reader started, plus the `line` it was given).
        var number: Int
        /// Byte offset just past the line's newline.
        var endOffset: Int64
    }

    private let handle: FileHandle
    private let name: String
    private var buffer: [UInt8] = []
    private var position = 0
    private var bufferStart: Int64
    private var number: Int
    private var atEOF = false

    init(url: URL, offset: Int64 = 0, line: Int = 0) throws(MBaaSError) {
        name = url.lastPathComponent
        do {
            handle = try FileHandle(forReadingFrom: url)
            if offset > 0 { try handle.seek(toOffset: UInt64(offset)) }
        } catch {
            // Missing is notFound, told by the error's own code (a domain that says nothing either way falls back to
            // whether the file is there); anything else (permissions, I/O) is the local file system's.
            let ns = error as NSError
            let missing: Bool
            switch ns.domain {
            case NSPOSIXErrorDomain: missing = ns.code == Int(ENOENT)
            case NSCocoaErrorDomain: missing = [CocoaError.fileReadNoSuchFile.rawValue, CocoaError.fileNoSuchFile.rawValue].contains(ns.code)
            default: missing = !FileManager.default.fileExists(atPath: url.path)
            }
            let kind: MBaaSError.Kind = missing ? .notFound : .localIO
            throw MBaaSError(kind, "cannot read \(url.path): \(MBaaSError.describe(error))")
        }
        bufferStart = offset
        number = line
    }

    func close() { try? handle.close() }

    /// The next non-empty line, parsed; a line that is not JSON is `decoding` naming the file and line.
    mutating func next() throws(MBaaSError) -> Line? {
        while true {
            var end = buffer[position...].firstIndex(of: 0x0A)
            while end == nil && !atEOF {
                if position > 1 << 18 {
                    buffer.removeFirst(position)
                    bufferStart += Int64(position)
                    position = 0
                }
                let data: Data
                do { data = try handle.read(upToCount: 1 << 18) ?? Data() } catch {
                    throw MBaaSError(.localIO, "cannot read \(name): \(MBaaSError.describe(error))")
                }
                if data.isEmpty { atEOF = true } else { buffer.append(contentsOf: data) }
                end = buffer[position...].firstIndex(of: 0x0A)
            }
            let lineEnd = end ?? buffer.count
            guard lineEnd > position || end != nil else { return nil }
            let bytes = buffer[position..<lineEnd]
            position = end.map { $0 + 1 } ?? buffer.count
            number += 1
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0D || $0 == 0x09 }) { continue }
            do {
                return Line(value: try JSON.parse(Data(bytes)), number: number, endOffset: bufferStart + Int64(position))
            } catch {
                throw MBaaSError(.decoding, "\(name) line \(number): \(error)")
            }
        }
    }
}

/// Appends lines to a file, creating it (0600) when missing.
final class NDJSONWriter {
    private let handle: FileHandle
    let url: URL

    init(url: URL) throws(MBaaSError) {
        self.url = url
        let fm = FileManager.default
        if !fm.fileExists(atPath: url.path) {
            guard fm.createFile(atPath: url.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw MBaaSError(.localIO, "cannot create \(url.path)")
            }
        }
        do {
            handle = try FileHandle(forWritingTo: url)
            try handle.seekToEnd()
        } catch {
            throw MBaaSError(.localIO, "cannot open \(url.path) for writing: \(MBaaSError.describe(error))")
        }
    }

    func append(_ json: JSON) throws(MBaaSError) {
        do { try handle.write(contentsOf: Data((json.printed([.sortedKeys]) + "\n").utf8)) } catch {
            throw MBaaSError(.localIO, "cannot write \(url.lastPathComponent): \(MBaaSError.describe(error))")
        }
    }

    func append(lines: [JSON]) throws(MBaaSError) {
        var text = ""
        for json in lines { text += json.printed([.sortedKeys]) + "\n" }
        do { try handle.write(contentsOf: Data(text.utf8)) } catch {
            throw MBaaSError(.localIO, "cannot write \(url.lastPathComponent): \(MBaaSError.describe(error))")
        }
    }

    func sync() { try? handle.synchronize() }
    func close() { try? handle.close() }
}
