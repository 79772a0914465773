import Foundation
import MBaaSCore

/// libFuzzer target: the neutral JSON parser. Any input must parse or throw `JSONParseError` (never crash,
/// never hang); whatever parses must print, and the printed text must parse again to the same document.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    guard let json = try? JSON.parse(data) else { return 0 }
    let printed = json.printed([.sortedKeys])
    guard let again = try? JSON.parse(printed) else { fatalError("printed JSON does not parse: \(printed)") }
    if again.printed([.sortedKeys]) != printed { fatalError("print is not stable: \(printed)") }
    return 0
}
