import Foundation
import MBaaSCore
import MBaaSReplay

/// libFuzzer target: the cassette loader (what `Cassette.load(from:)` does after reading the file). Any input
/// must load or throw, never crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCassette(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    guard let json = try? JSON.parse(data) else { return 0 }
    if let cassette = try? Cassette(json: json) {
        _ = try? cassette.substituting(["run": "r1", "token": "t"])
        _ = cassette.json.printed()
    }
    return 0
}
