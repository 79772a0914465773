import Foundation
import MBaaSCore
import Testing

@Suite("Locked (the package's one lock type)")
struct LockedTests {
    @Test("changes from many threads at once are none of them lost; a read sees the last change")
    func concurrentChanges() async {
        let box = Locked([String: Int]())
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for i in 0..<1_000 { box.withLock { $0["k\(i % 10)", default: 0] += 1; $0["t\(task)", default: 0] += 1 } }
                }
            }
        }
        let value = box.value
        #expect((0..<10).map { value["k\($0)"] } == Array(repeating: 800, count: 10))
        #expect((0..<8).allSatisfy { value["t\($0)"] == 1_000 })
    }

    @Test("what the body returns or throws (typed) comes back; a throwing body keeps the changes it made before")
    func returnsAndThrows() {
        let box = Locked(1)
        #expect(box.withLock { $0 += 1; return $0 * 10 } == 20)
        #expect(throws: MBaaSError.self) {
            try box.withLock { (n: inout Int) throws(MBaaSError) in
                n = 5
                throw MBaaSError(.conflict, "stop")
            }
        }
        #expect(box.value == 5)
    }
}
