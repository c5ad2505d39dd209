package score

import "strings"

// The judge prompts below are the published scoring protocols, reproduced word for word (including
// their whitespace, typos and trailing newlines) because scores are only comparable under the same
// prompt. Each is sent as the single user message, with no system message, as the sources do.

// PromptWebThinker is the "Correct/Incorrect" equivalence judge of WebThinker (RUC-NLPIR/WebThinker,
// scripts/evaluate: llm_evaluate_equivalence), used for GAIA's text-only subset and WebWalkerQA.
const PromptWebThinker = `You are an evaluation assistant. Please determine if the predicted answer is equivalent to the labeled answer.

Question: {question}

Labeled Answer: {labeled_answer}

Predicted Answer: {pred_answer}

Are these answers equivalent? Please respond with "Correct" if they are equivalent, or "Incorrect" if they are not equivalent. Do not include any other text.
`

// PromptTongyiGAIA is the Tongyi DeepResearch variant of the same judge (Alibaba-NLP/DeepResearch,
// judge_prompt.py: JUDGE_PROMPT_GAIA).
const PromptTongyiGAIA = `You are an evaluation assistant. Please determine if the predicted answer is equivalent to the labeled answer.

Question: {question}

Labeled Answer: {labeled_answer}

Predicted Answer: {pred_answer}

Did the model give an answer **equivalent** to the labeled answer? Please respond with "Correct" if they are equivalent, or "Incorrect" if they are not equivalent. Do not include any other text.
`

// PromptXBench is xbench's LLM judge (xbench-ai/xbench-evals, eval_grader.py: LLM_JUDGE_PROMPT). The
// source applies .strip(), so there is no leading or trailing newline.
const PromptXBench = `你是一个通用人工智能助手。根据下面给出的[正确答案], 判断以下对[原问题]的[回答]的回答是否正确。

[原问题]: {question}

[正确答案]: {labeled_answer}

[回答]:{pred_answer}

你的判断必须按照以下格式和标准进行:

最终答案: 从[回答]中提取出的最终准确答案。如果[回答]中没有明确的最终答案, 则填写'无'。

解释: 根据[正确]解释为什么[最终答案]是正确的或错误的。只关注[最终答案]与[正确答案]之间是否存在实质性差异, 不要评论题目的背景, 不要尝试重新解题, 不要为任何不同于[正确答案]的答案辩护, 只专注于判断答案是否一致。

结论: 如果[最终答案]与上方给出的[正确答案]一致, 或者在数值题目中处于可接受的微小误差范围内, 则填写'正确'; 否则（即存在任何不一致、歧义、不等价或提取出的答案错误的情况）填写'错误'。`

// RenderPrompt fills a judge template. Substitution is a single pass over the template, so braces
// inside the question, answer or prediction are left alone.
func RenderPrompt(template string, c Case) string {
	return strings.NewReplacer(
		"{question}", c.Question,
		"{labeled_answer}", c.Answer,
		"{pred_answer}", c.Prediction,
	).Replace(template)
}
