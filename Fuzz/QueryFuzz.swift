import Foundation
import MBaaSCore

/// libFuzzer target: the neutral query parser (`--where` JSON). Any input must parse or throw `MBaaSError`;
/// a parsed query must pass or fail `validateComplexity` without crashing.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzQuery(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    guard let query = try? Query.parse(className: "Memo", whereJSON: text) else { return 0 }
    _ = try? query.validateComplexity()
    _ = query.predicate?.operators
    _ = query.predicate?.keys
    return 0
}
