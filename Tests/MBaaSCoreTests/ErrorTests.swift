import Foundation
import MBaaSCore
import Testing

@Suite("MBaaSError kinds, wrapping and descriptions")
struct ErrorTests {
    @Test func kindsAreExtensible() throws {
        let custom = MBaaSError.Kind(rawValue: "quotaExceeded")
        #expect(custom != .unavailable && custom.rawValue == "quotaExceeded")
        #expect(MBaaSError.Kind.allCases.map(\.rawValue).contains("localIO"))
        #expect(MBaaSError.Kind.allCases.map(\.rawValue).contains("internal"))
        #expect(MBaaSError(.notFound, "x").description == "notFound: x")
        let coded = try JSONEncoder().encode([MBaaSError.Kind.localIO])
        #expect(String(decoding: coded, as: UTF8.self) == #"["localIO"]"#)
        #expect(try JSONDecoder().decode([MBaaSError.Kind].self, from: coded) == [.localIO])
    }

    @Test func wrapNoLongerBlamesTheCaller() {
        struct Odd: Error {}
        #expect(MBaaSError.wrap(Odd()).kind == .internal)
        let noFile = CocoaError(.fileReadNoSuchFile)
        #expect(MBaaSError.wrap(noFile).kind == .localIO)
        #expect(MBaaSError.wrap(POSIXError(.ENOSPC)).kind == .localIO)
        #expect(MBaaSError.wrap(URLError(.timedOut)).kind == .transport)
    }

    @Test func descriptionsSayWhatHappened() throws {
        do {
            _ = try Data(contentsOf: URL(fileURLWithPath: "/nonexistent/file"))
            Issue.record("expected a failure")
        } catch {
            let text = MBaaSError.describe(error)
            #expect(text == "No such file or directory", "\(text)")
            #expect(!text.contains("NSCocoaErrorDomain"))
        }
        do {
            try Data("x".utf8).write(to: URL(fileURLWithPath: "/nonexistent/dir/file"))
            Issue.record("expected a failure")
        } catch {
            #expect(!MBaaSError.describe(error).contains("Domain"), "\(MBaaSError.describe(error))")
        }
        #expect(MBaaSError.describe(URLError(.timedOut)) == "timed out")
        #expect(MBaaSError.describe(URLError(.cannotConnectToHost)) == "connection refused")
    }

    @Test func complexityLimitsNameTheLimit() {
        let many = Query("T", predicate: .or((0..<501).map { .compare("k", .eq, .int(Int64($0))) }))
        #expect(throws: MBaaSError.self) { try many.validateComplexity() }
        #expect((try? Query("T", predicate: .or((0..<500).map { .compare("k", .eq, .int(Int64($0))) })).validateComplexity()) != nil)
        let values = Query("T", predicate: .in("k", (0..<10_001).map { .int(Int64($0)) }))
        do { try values.validateComplexity(); Issue.record("expected a failure") } catch {
            #expect(error.kind == .invalidRequest && error.message.contains("at most 10000"))
        }
    }
}

@Suite("MBaaSError carries structure")
struct ErrorDetailTests {
    @Test("Kind is not ExpressibleByStringLiteral (a misspelt kind does not compile) and encodes as before")
    func kindTakesNoLiterals() throws {
        #expect(!((MBaaSError.Kind.self as Any.Type) is any ExpressibleByStringLiteral.Type))
        let names = ["notFound", "unauthorized", "forbidden", "conflict", "duplicate", "invalidRequest", "rateLimited",
                     "unavailable", "unsupported", "transport", "decoding", "localIO", "internal"]
        #expect(MBaaSError.Kind.allCases.map(\.rawValue) == names)
        let coded = try JSONEncoder().encode(MBaaSError.Kind.allCases)
        #expect(String(decoding: coded, as: UTF8.self) == "[" + names.map { "\"\($0)\"" }.joined(separator: ",") + "]")
        let custom = try JSONDecoder().decode([MBaaSError.Kind].self, from: Data(#"["quotaExceeded","notFound"]"#.utf8))
        #expect(custom == [MBaaSError.Kind(rawValue: "quotaExceeded"), .notFound])
    }

    @Test("refusedField, currentVersion and the numeric vendor code are values, set by builders")
    func detailValues() {
        let e = MBaaSError(.conflict, "changed", vendorCode: "130").conflicting(currentVersion: "7")
        #expect(e.currentVersion == "7" && e.numericVendorCode == 130 && e.refusedField == nil)
        #expect(MBaaSError(.notFound, "x", vendorCode: "E404001").numericVendorCode == nil)
        #expect(MBaaSError(.notFound, "x").numericVendorCode == nil)
        let taken = MBaaSError(.duplicate, "taken").refusing(MBaaSError.emailKey)
        #expect(taken.refusedField == "email" && !taken.refusesRecordId)
        #expect(MBaaSError(.duplicate, "taken").refusing(MBaaSError.usernameKey).refusedField == "username")
    }

    @Test("a field-type document entry that is not a type name names Class.field in refusedField; other shapes do not")
    func fieldTypeEntryIsRefusedByName() throws {
        do {
            _ = try fieldTypes(fromJSON: .object(["Memo": .object(["n": 5])]), context: "types")
            Issue.record("expected a failure")
        } catch {
            #expect(error.kind == .invalidRequest && error.refusedField == "Memo.n")
            #expect(error.message == "types: Memo.n is 5, not a type name")
        }
        do {
            _ = try fieldTypes(fromJSON: .object(["Memo": 5]), context: "types")
            Issue.record("expected a failure")
        } catch {
            #expect(error.kind == .invalidRequest && error.refusedField == nil)
        }
    }
}
