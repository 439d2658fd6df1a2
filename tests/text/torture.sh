# Sourced: torture_text FILE writes the Unicode torture text the GPT-2 tokenizer tests use:
# accents, CJK, emoji (modifiers, ZWJ sequences, flags), combining marks, scripts whose vowel
# signs are marks, every kind of whitespace, numbers of every Unicode kind, contractions in
# every case, the end-of-text marker as plain text, and bytes that are not UTF-8 (a lone
# continuation byte, 0xff, an overlong slash, a truncated sequence, an encoded surrogate).
torture_text() {
  {
    printf 'Café, naïve Ångström; e\xcc\x81 a\xcc\x88 (combining)\n'
    printf '日本語のテキストと中文，한국어도。\n'
    printf 'Emoji: \xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd \xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7 \xf0\x9f\x87\xab\xf0\x9f\x87\xb7!!\n'
    printf 'Ελληνικά Русский עברית हिन्दी தமிழ்\n'
    printf 'tabs\t\tand  two spaces,   three,\r\nCRLF; nbsp\xc2\xa0here; ideographic\xe3\x80\x80space; line\xe2\x80\xa8sep; nel\xc2\x85x\n'
    printf '   leading spaces and trailing   \n\n\n  \n'
    printf 'Numbers: 12345 3.14159 1,000,000 \xd9\xa1\xd9\xa2\xd9\xa3 \xe2\x85\xab \xc2\xbd x\xc2\xb2 007\n'
    printf "Contractions: it's don't they're we've I'm you'll he'd IT'S DON'T O'Neil rock'n'roll it\xe2\x80\x99s\n"
    printf 'Marker: <|endoftext|> is text here.\n'
    printf 'Invalid: \x80 lone, \xff ff, \xc0\xaf overlong, \xe2\x82 truncated, \xed\xa0\x80 surrogate, end\xe2'
  } >"$1"
}
