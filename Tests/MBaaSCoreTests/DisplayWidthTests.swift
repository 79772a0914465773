import Testing
@testable import MBaaSCore

@Suite("Display width of text in tables")
struct DisplayWidthTests {
    @Test("kanji, kana, hangul, fullwidth forms and emoji take two columns; combining marks and format characters none")
    func widths() {
        #expect("memo".displayWidth == 4)
        #expect("ラーメン二郎".displayWidth == 12)
        #expect("한국어".displayWidth == 6)
        #expect("ＡＢ".displayWidth == 4)
        #expect("🍜".displayWidth == 2)
        #expect("e\u{301}".displayWidth == 1)          // e + combining acute
        #expect("a\u{200B}b".displayWidth == 2)        // zero-width space
        #expect("ｱｲｳ".displayWidth == 3)                // halfwidth katakana stay narrow
    }

    @Test("padding and clipping count columns and never split a character")
    func padAndClip() {
        #expect("二郎".padded(toDisplayWidth: 6) == "二郎  ")
        #expect("二郎".padded(toDisplayWidth: 3) == "二郎")
        #expect("ラーメン二郎".clipped(toDisplayWidth: 6) == "ラー…")
        #expect("ラーメン二郎".clipped(toDisplayWidth: 7) == "ラーメ…")
        #expect("ramen".clipped(toDisplayWidth: 5) == "ramen")
        #expect("ramen jiro".clipped(toDisplayWidth: 6) == "ramen…")
    }
}
