import Foundation
import MBaaSCore
import Testing

@Suite("JSON array file reader")
struct JSONArrayFileReaderTests {
    @Test("a malformed element over many lines is named by the line of the problem, parsed in place or apart")
    func failureNamesTheBadLine() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("reader-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: url) }
        // Line 1 `{"results":[`, the good element on 2-5, the bad one starts on 6 and breaks on 9.
        let text = "{\"results\":[\n{\n  \"a\": 1,\n  \"b\": 2\n},\n{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\" 3\n}\n]}\n"
        try Data(text.utf8).write(to: url)
        var reader = try JSONArrayFileReader(url: url, member: "results")
        #expect(try reader.next()?.line == 2)
        #expect { _ = try reader.next() } throws: { ($0 as? JSONArrayFileReader.Failure)?.line == 9 }
        var raw = try JSONArrayFileReader(url: url, member: "results")
        _ = try raw.nextRaw()
        let element = try #require(try raw.nextRaw())
        #expect(element.line == 6)
        #expect { _ = try element.parse() } throws: { ($0 as? JSONArrayFileReader.Failure)?.line == 9 }
    }
}

@Suite("Reading large JSON arrays")
struct JSONArrayReadingTests {
    func write(_ text: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("array-\(UUID().uuidString).json")
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    @Test("elements are read one by one with their lines, strings holding brackets and escaped quotes included; a reader resumes at an element")
    func elements() throws {
        let url = try write("{\"other\":{\"results\":[1]},\n\"results\": [\n {\"a\":\"]}\\\"[\"},\n 2 ,\"x\",\n[3,{\"b\":[]}]\n]}")
        defer { try? FileManager.default.removeItem(at: url) }
        var reader = try JSONArrayFileReader(url: url, member: "results")
        let first = try #require(try reader.next())
        #expect(first.value == .object(["a": "]}\"["]) && first.line == 3)
        #expect(try reader.next()?.value == 2)
        let third = try #require(try reader.next())
        #expect(third.value == "x")
        #expect(try reader.next()?.value == .array([3, .object(["b": .array([])])]))
        #expect(try reader.next() == nil)
        reader.close()
        var resumed = try JSONArrayFileReader(url: url, resumingAt: third.endOffset, line: third.endLine)
        #expect(try resumed.next()?.line == 5)
        #expect(try resumed.next() == nil)
        resumed.close()
    }

    @Test("elements that straddle the reader's 1 MiB reads come out whole, with their lines, and a reader resumes past the first read")
    func acrossReads() throws {
        // ~1.2 MiB: the first read ends inside some element (strings with escaped quotes, brackets and unicode).
        let count = 3_500
        var parts: [String] = []
        for i in 0..<count {
            let filler = String(repeating: "é\\\"]}", count: 20 + i % 60)
            parts.append("{\"n\": \(i), \"s\": \"\(filler)\",\n \"a\": [\(i), {\"k\": \"v\"}]}")
        }
        let text = "{\"results\": [\n" + parts.joined(separator: ",\n") + "\n]}"
        #expect(text.utf8.count > 1 << 20)
        let url = try write(text)
        defer { try? FileManager.default.removeItem(at: url) }
        var reader = try JSONArrayFileReader(url: url, member: "results")
        var seen = 0
        var resumeAt: JSONArrayFileReader.Element?
        while let element = try reader.next() {
            #expect(element.value["n"] == .int(Int64(seen)) && element.line == 2 + 2 * seen, "element \(seen)")
            #expect(element.value["s"]?.stringValue?.count == 4 * (20 + seen % 60))   // é " ] }
            if seen == 3_000 { resumeAt = element }
            seen += 1
        }
        reader.close()
        #expect(seen == count)
        let mark = try #require(resumeAt)
        var resumed = try JSONArrayFileReader(url: url, resumingAt: mark.endOffset, line: mark.endLine)
        defer { resumed.close() }
        let next = try #require(try resumed.next())
        #expect(next.value["n"] == 3_001 && next.line == 2 + 2 * 3_001)
    }

    @Test("raw elements are the same elements with the same lines, parsed later; a malformed one names its line when parsed")
    func rawElements() throws {
        let url = try write("{\"results\": [\n {\"a\":\"]}\\\"[\"},\n 2 ,\"x\",\n[3,{\"b\":[]}],\n{\"c\" 1}\n]}")
        defer { try? FileManager.default.removeItem(at: url) }
        var reader = try JSONArrayFileReader(url: url, member: "results")
        defer { reader.close() }
        var raw: [JSONArrayFileReader.RawElement] = []
        while let element = try reader.nextRaw() { raw.append(element) }
        #expect(raw.map(\.line) == [2, 3, 3, 4, 5])
        #expect(try raw[0].parse() == .object(["a": "]}\"["]))
        #expect(try raw[3].parse() == .array([3, .object(["b": .array([])])]))
        let failure = #expect(throws: JSONArrayFileReader.Failure.self) { try raw[4].parse() }
        #expect(failure?.line == 5)
    }

    @Test("malformed arrays are errors naming the line: missing or extra commas, an unclosed array, no results member")
    func malformed() throws {
        for text in ["{\"results\":[{\"a\":1}\n {\"b\":2}]}", "{\"results\":[,1]}", "{\"results\":[1,]}", "{\"results\":[1,,2]}",
                     "{\"results\":[1, 2", "{\"other\":[]}", "[1]"] {
            let url = try write(text)
            defer { try? FileManager.default.removeItem(at: url) }
            #expect(throws: JSONArrayFileReader.Failure.self, "\(text)") {
                var reader = try JSONArrayFileReader(url: url, member: "results")
                while try reader.next() != nil {}
            }
        }
    }

    @Test("what follows the array is read too: a second results member, a repeated name, a bad member or trailing text is an error naming it; a resumed reader checks the same")
    func endOfFileIsChecked() throws {
        func failure(_ text: String, member: String? = "results", resumed: Bool = false) throws -> String? {
            let url = try write(text)
            defer { try? FileManager.default.removeItem(at: url) }
            do {
                var reader = try JSONArrayFileReader(url: url, member: member)
                if resumed {
                    // One element in, then a reader resumed from there.
                    let first = try #require(try reader.next())
                    reader.close()
                    reader = try JSONArrayFileReader(url: url, resumingAt: first.endOffset, line: first.endLine, member: member)
                }
                while try reader.nextRaw() != nil {}
                reader.close()
                return nil
            } catch let e as JSONArrayFileReader.Failure {
                return e.description
            }
        }
        for resumed in [false, true] {
            #expect(try failure("{\"results\":[1,2],\n\"results\":[3]}", resumed: resumed) == #"line 2: the top-level object has a second "results" member"#)
            #expect(try failure("{\"results\":[1,2]} x", resumed: resumed) == "line 1: unexpected characters after the top-level value")
            #expect(try failure("{\"results\":[1,2]", resumed: resumed) == "line 1: the file ends before the top-level object's closing '}'")
            #expect(try failure("{\"results\":[1,2],\"n\":01}", resumed: resumed)?.contains(#""n": invalid JSON"#) == true)
            #expect(try failure("{\"results\":[1,2] \"n\":1}", resumed: resumed) == #"line 1: expected ',' or '}' after the "results" array"#)
            #expect(try failure("[1,2] [3]", member: nil, resumed: resumed) == "line 1: unexpected characters after the top-level value")
            #expect(try failure("{\"count\":2,\"results\":[1,2],\"more\":{\"a\":[1]}}\n", resumed: resumed) == nil)
            #expect(try failure("[1,2]\n", member: nil, resumed: resumed) == nil)
        }
        #expect(try failure("{\"count\":1,\"count\":2,\"results\":[1]}") == #"line 1: the top-level object has a second "count" member"#)
        #expect(try failure("{\"n\":01,\"results\":[1]}")?.contains(#""n": invalid JSON"#) == true)      // before the array too
        #expect(try failure("{\"results\":[1],\"\\x\":1}")?.contains("invalid member name") == true)
        #expect(try failure("{\"results\":[1,2],\"count\":1,\"count\":2}") == #"line 1: the top-level object has a second "count" member"#)
    }
}
