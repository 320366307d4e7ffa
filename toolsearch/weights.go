package toolsearch

// Weights are the ranking's numbers: BM25F's k1 and its fields' weights,
// the weights of the words a request is widened with, and the factors
// of fit. An index uses DefaultWeights unless Parts.Weights says
// otherwise: the evaluation's tuning harness varies them jointly
// (toolsearch/searcheval TestTuneWeights, docs/tool-search.md's ninth
// session); each default is where its reasons are written.
type Weights struct {
	K1 float64 // saturation of a term's summed frequency (k1)
	// Fields are the BM25F weights by field name (engineFields,
	// sourceFields, responseField); a field not named keeps its own.
	Fields map[string]float64
	// Expansions of a request's words, against 1 for its own.
	Vocabulary  float64 // the hand vocabulary's synonyms, a word's extensions, a value's kind (synonym)
	Lexicon     float64 // WordNet's synonyms (lexSynonym)
	Broader     float64 // WordNet's broader words (lexBroader)
	Gloss       float64 // the words of WordNet's definition of a word (lexGloss)
	Translation float64 // CC-CEDICT's translations (translated)
	ChineseVerb float64 // CC-CEDICT's Chinese words of a request's Chinese verb (zhVerbSynonym)
	Compound    float64 // two adjacent words of a request as the catalog's one (compoundWeight)
	Typo        float64 // a mistyped word's corrections (typoWeight)
	Payload     float64 // a request's values (payloadWeight)
	CJKChar     float64 // a request's single CJK characters (cjkCharWeight)
	// Factors of fit.
	Title      float64 // the title share's most (titleBoost)
	Action     float64 // a tool doing what the request asks (actionBoost)
	Addressed  float64 // a tool addressing what the request numbers (addressedBoost)
	Source     float64 // a source the request names (sourceBoost)
	Deprecated float64 // a deprecated tool (deprecatedFactor)
	Diversity  float64 // the share of the first result a source's best tool needs to join the first page (diversityRatio)
}

// DefaultWeights are the engine's weights.
func DefaultWeights() Weights {
	w := Weights{
		K1: k1, Fields: map[string]float64{},
		Vocabulary: synonym, Lexicon: lexSynonym, Broader: lexBroader, Gloss: lexGloss, Translation: translated, ChineseVerb: zhVerbSynonym,
		Compound: compoundWeight, Typo: typoWeight, Payload: payloadWeight, CJKChar: cjkCharWeight,
		Title: titleBoost, Action: actionBoost, Addressed: addressedBoost, Source: sourceBoost,
		Deprecated: deprecatedFactor, Diversity: diversityRatio,
	}
	for _, f := range append(append(engineFields[:len(engineFields):len(engineFields)], sourceFields...), responseField) {
		w.Fields[f.name] = f.weight
	}
	return w
}

var defaultWeights = DefaultWeights()

// weighted is fs with the weights w gives them.
func weighted(fs []field, w *Weights) []field {
	out := make([]field, len(fs))
	for i, f := range fs {
		if x, ok := w.Fields[f.name]; ok {
			f.weight = x
		}
		out[i] = f
	}
	return out
}
